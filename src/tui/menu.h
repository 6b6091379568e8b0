// Menu: the model of an interactive terminal menu (a list to move through and tick), and the
// decoding of the keys a terminal sends, apart from the terminal itself (src/tui/terminal.h)
// so that both are tested without one.
//
// Keys: Up/Down (or k/j) move, PgUp/PgDn/Home/End jump, Space ticks the highlighted item,
// `a` ticks all or none, Enter confirms, q / Esc / Ctrl-C cancel. Enter with nothing ticked
// chooses the highlighted item.
//
// Thread-safety: plain values; one thread at a time.
#ifndef FOOTPRINT_TUI_MENU_H_
#define FOOTPRINT_TUI_MENU_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace footprint::tui {

enum class Key {
  kUp,
  kDown,
  kPageUp,
  kPageDown,
  kHome,
  kEnd,
  kToggle,
  kToggleAll,
  kEnter,
  kCancel
};

// Keys in `bytes` (read from a terminal in raw mode). An escape sequence cut short at the end
// of `bytes` is left unread (`*consumed` stops before it) unless `final`, when a lone Esc is
// the Esc key. Bytes that mean nothing here are skipped.
std::vector<Key> DecodeKeys(std::string_view bytes, bool final, size_t* consumed);

class Menu {
 public:
  enum class Outcome { kContinue, kConfirmed, kCancelled };

  // `checked`: items ticked at the start (indices).
  Menu(std::string title, std::vector<std::string> items, std::vector<size_t> checked = {});

  Outcome Handle(Key key);
  // Rows available for items (the rest of the screen holds the title and the help line).
  void SetHeight(size_t rows);

  // The ticked items in list order, or the highlighted one when none is ticked.
  std::vector<size_t> Chosen() const;
  size_t cursor() const { return cursor_; }
  bool checked(size_t i) const { return checked_[i]; }
  size_t size() const { return items_.size(); }
  const std::string& item(size_t i) const { return items_[i]; }
  const std::string& title() const { return title_; }

  // The lines to draw, each at most `width` characters: the title, the visible items
  // ("> [x] text" for the highlighted one), and a help line.
  std::vector<std::string> Render(size_t width) const;

 private:
  void Move(long delta);

  std::string title_;
  std::vector<std::string> items_;
  std::vector<bool> checked_;
  size_t cursor_ = 0;
  size_t top_ = 0;  // first visible item
  size_t height_ = 15;
};

}  // namespace footprint::tui

#endif  // FOOTPRINT_TUI_MENU_H_
