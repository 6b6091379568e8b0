#include "tui/menu.h"

#include <algorithm>
#include <optional>

namespace footprint::tui {

namespace {

// The key a byte outside an escape sequence stands for, if any.
std::optional<Key> PlainKey(char c) {
  switch (c) {
    case ' ':
      return Key::kToggle;
    case '\r':
    case '\n':
      return Key::kEnter;
    case 'q':
    case 'Q':
    case '\x03':  // Ctrl-C: raw mode turns it into a byte rather than SIGINT
      return Key::kCancel;
    case 'k':
      return Key::kUp;
    case 'j':
      return Key::kDown;
    case 'a':
      return Key::kToggleAll;
    default:
      return std::nullopt;
  }
}

// The key of an escape sequence ending in `last`, with `params` before it, if any.
std::optional<Key> SequenceKey(char last, std::string_view params) {
  switch (last) {
    case 'A':
      return Key::kUp;
    case 'B':
      return Key::kDown;
    case 'H':
      return Key::kHome;
    case 'F':
      return Key::kEnd;
    case '~':
      if (params == "5") return Key::kPageUp;
      if (params == "6") return Key::kPageDown;
      if (params == "1" || params == "7") return Key::kHome;
      if (params == "4" || params == "8") return Key::kEnd;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

}  // namespace

std::vector<Key> DecodeKeys(std::string_view bytes, bool final, size_t* consumed) {
  std::vector<Key> keys;
  size_t i = 0;
  while (i < bytes.size()) {
    const char c = bytes[i];
    if (c != '\x1b') {
      if (std::optional<Key> key = PlainKey(c)) keys.push_back(*key);
      ++i;
      continue;
    }
    // ESC: alone it is the Esc key; "ESC [" or "ESC O" opens a sequence ending in a byte in
    // 0x40..0x7e, with parameters (digits, ';') before it.
    if (i + 1 >= bytes.size()) {
      if (!final) break;
      keys.push_back(Key::kCancel);
      ++i;
      continue;
    }
    if (bytes[i + 1] != '[' && bytes[i + 1] != 'O') {
      keys.push_back(Key::kCancel);
      ++i;
      continue;
    }
    size_t end = i + 2;
    while (end < bytes.size() && !(bytes[end] >= 0x40 && bytes[end] <= 0x7e)) ++end;
    if (end >= bytes.size()) {
      if (!final) break;
      i = bytes.size();  // an unfinished sequence at the very end: nothing to act on
      continue;
    }
    std::string_view params = bytes.substr(i + 2, end - i - 2);
    if (std::optional<Key> key = SequenceKey(bytes[end], params)) keys.push_back(*key);
    i = end + 1;
  }
  if (consumed) *consumed = i;
  return keys;
}

Menu::Menu(std::string title, std::vector<std::string> items, std::vector<size_t> checked)
    : title_(std::move(title)), items_(std::move(items)), checked_(items_.size(), false) {
  for (size_t i : checked) {
    if (i < checked_.size()) checked_[i] = true;
  }
}

void Menu::SetHeight(size_t rows) {
  height_ = std::max<size_t>(1, rows);
  Move(0);
}

void Menu::Move(long delta) {
  if (items_.empty()) return;
  long last = static_cast<long>(items_.size()) - 1;
  cursor_ = static_cast<size_t>(std::clamp(static_cast<long>(cursor_) + delta, 0L, last));
  if (cursor_ < top_) top_ = cursor_;
  if (cursor_ >= top_ + height_) top_ = cursor_ + 1 - height_;
}

Menu::Outcome Menu::Handle(Key key) {
  const long page = static_cast<long>(height_);
  const long everything = static_cast<long>(items_.size());
  switch (key) {
    case Key::kUp:
      Move(-1);
      break;
    case Key::kDown:
      Move(1);
      break;
    case Key::kPageUp:
      Move(-page);
      break;
    case Key::kPageDown:
      Move(page);
      break;
    case Key::kHome:
      Move(-everything);
      break;
    case Key::kEnd:
      Move(everything);
      break;
    case Key::kToggle:
      if (!items_.empty()) checked_[cursor_] = !checked_[cursor_];
      break;
    case Key::kToggleAll: {
      bool all = std::all_of(checked_.begin(), checked_.end(), [](bool b) { return b; });
      std::fill(checked_.begin(), checked_.end(), !all);
      break;
    }
    case Key::kEnter:
      return items_.empty() ? Outcome::kCancelled : Outcome::kConfirmed;
    case Key::kCancel:
      return Outcome::kCancelled;
  }
  return Outcome::kContinue;
}

std::vector<size_t> Menu::Chosen() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < checked_.size(); ++i) {
    if (checked_[i]) out.push_back(i);
  }
  if (out.empty() && !items_.empty()) out.push_back(cursor_);
  return out;
}

std::vector<std::string> Menu::Render(size_t width) const {
  auto fit = [width](std::string line) {
    // Control characters from the database (a run named with an escape sequence or a newline)
    // would drive the terminal and break the redraw's line count: shown as '?'.
    for (char& c : line) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    // Cut at `width` characters, counting UTF-8 lead bytes only.
    size_t chars = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      if ((static_cast<unsigned char>(line[i]) & 0xc0) == 0x80) continue;
      if (++chars > width) {
        line.resize(i);
        break;
      }
    }
    return line;
  };
  std::vector<std::string> lines;
  size_t ticked = static_cast<size_t>(std::count(checked_.begin(), checked_.end(), true));
  lines.push_back(fit(title_ + "  (" + std::to_string(ticked) + " of " +
                      std::to_string(items_.size()) + " selected)"));
  size_t end = std::min(items_.size(), top_ + height_);
  for (size_t i = top_; i < end; ++i) {
    lines.push_back(
        fit(std::string(i == cursor_ ? "> " : "  ") + (checked_[i] ? "[x] " : "[ ] ") + items_[i]));
  }
  std::string more;
  if (top_ > 0 || end < items_.size()) {
    more = "  [" + std::to_string(top_ + 1) + "-" + std::to_string(end) + " of " +
           std::to_string(items_.size()) + "]";
  }
  lines.push_back(fit("  up/down move, space select, a all, enter confirm, q/esc cancel" + more));
  return lines;
}

}  // namespace footprint::tui
