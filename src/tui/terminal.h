// Terminal: runs a Menu (src/tui/menu.h) on the controlling terminal, keys from stdin and the
// menu drawn on stderr, so that stdout stays free for what the command prints.
//
// The terminal is put in raw mode (termios) for the menu's duration and restored on every way
// out: confirm, cancel, an error, and SIGINT/SIGTERM/SIGHUP/SIGQUIT sent by another process
// (the handler restores the terminal, then the signal's previous disposition takes effect).
//
// Thread-safety: one menu at a time in a process (the saved terminal state is process-wide).
#ifndef FOOTPRINT_TUI_TERMINAL_H_
#define FOOTPRINT_TUI_TERMINAL_H_

#include <optional>
#include <vector>

#include "footprint/status.h"
#include "tui/menu.h"

namespace footprint::tui {

// Whether a menu can be shown: stdin and stderr are both terminals.
bool InteractiveTerminal();

// Shows `menu` until it is confirmed (returns Menu::Chosen()) or cancelled (returns nullopt).
// IoError when the terminal cannot be read or set up.
Result<std::optional<std::vector<size_t>>> RunMenu(Menu& menu);

}  // namespace footprint::tui

#endif  // FOOTPRINT_TUI_TERMINAL_H_
