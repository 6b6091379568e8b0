#include "tui/terminal.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>

namespace footprint::tui {
namespace {

constexpr int kIn = STDIN_FILENO;
constexpr int kOut = STDERR_FILENO;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr char kShowCursor[] = "\x1b[?25h";

// The terminal as it was before raw mode, for the signal handler (async-signal-safe use only).
termios g_saved;
volatile sig_atomic_t g_raw = 0;
volatile sig_atomic_t g_signal = 0;
// Write end of a pipe the handler writes to, so that a signal wakes the menu's poll() even when
// it arrives between two reads (self-pipe trick).
int g_wake_fd = -1;

void RestoreTerminal() {
  if (!g_raw) return;
  tcsetattr(kIn, TCSAFLUSH, &g_saved);
  ssize_t unused = write(kOut, kShowCursor, sizeof kShowCursor - 1);
  (void)unused;
  g_raw = 0;
}

extern "C" void OnSignal(int sig) {
  RestoreTerminal();
  g_signal = sig;
  if (g_wake_fd >= 0) {
    ssize_t unused = write(g_wake_fd, "s", 1);
    (void)unused;
  }
}

void WriteAll(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(kOut, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the terminal went away: the next read says so
    done += static_cast<size_t>(n);
  }
}

// Raw mode and signal handlers for the lifetime of the object; the destructor undoes both and
// then delivers a signal that arrived meanwhile to its previous handler.
class RawMode {
 public:
  Status Enter() {
    if (tcgetattr(kIn, &g_saved) != 0) {
      return IoError(std::string("cannot read the terminal: ") + std::strerror(errno));
    }
    if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
      return IoError(std::string("cannot create a pipe: ") + std::strerror(errno));
    }
    g_wake_fd = wake_[1];
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &sa, &previous_[i]);
    installed_ = true;
    g_signal = 0;
    termios raw = g_saved;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | ISIG | IEXTEN);
    raw.c_iflag &= ~static_cast<tcflag_t>(IXON | ICRNL);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    g_raw = 1;
    if (tcsetattr(kIn, TCSAFLUSH, &raw) != 0) {
      g_raw = 0;
      return IoError(std::string("cannot set up the terminal: ") + std::strerror(errno));
    }
    WriteAll("\x1b[?25l");  // hide the cursor while the menu is drawn
    return Status::Ok();
  }
  ~RawMode() {
    RestoreTerminal();
    if (installed_) {
      for (size_t i = 0; i < std::size(kSignals); ++i) {
        sigaction(kSignals[i], &previous_[i], nullptr);
      }
    }
    g_wake_fd = -1;
    for (int fd : wake_) {
      if (fd >= 0) close(fd);
    }
    if (g_signal) raise(g_signal);  // the previous disposition: by default, the process ends
  }
  int wake_fd() const { return wake_[0]; }

 private:
  int wake_[2] = {-1, -1};
  struct sigaction previous_[std::size(kSignals)]{};
  bool installed_ = false;
};

size_t TerminalRows(size_t* columns) {
  winsize ws{};
  if (ioctl(kOut, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0) {
    *columns = ws.ws_col ? ws.ws_col : 80;
    return ws.ws_row;
  }
  *columns = 80;
  return 24;
}

// Draws the menu over its last frame (`drawn` lines); returns the lines drawn now.
size_t DrawMenu(Menu& menu, size_t drawn) {
  size_t columns = 80;
  size_t rows = TerminalRows(&columns);
  menu.SetHeight(rows > 4 ? std::min<size_t>(rows - 3, 20) : 1);
  std::string frame = drawn ? "\x1b[" + std::to_string(drawn) + "F" : "\r";
  frame += "\x1b[J";
  std::vector<std::string> lines = menu.Render(columns > 1 ? columns - 1 : columns);
  for (const std::string& line : lines) frame += line + "\r\n";
  WriteAll(frame);
  return lines.size();
}

// The keys of the bytes read so far, taken out of `pending`. Part of an escape sequence (or
// the Esc key) waits briefly for the rest, then counts as it is.
std::vector<Key> DecodePendingKeys(std::string& pending) {
  size_t used = 0;
  std::vector<Key> keys = DecodeKeys(pending, false, &used);
  if (used < pending.size()) {
    pollfd p{kIn, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) {
      std::vector<Key> rest = DecodeKeys(std::string_view(pending).substr(used), true, nullptr);
      keys.insert(keys.end(), rest.begin(), rest.end());
      used = pending.size();
    }
  }
  pending.erase(0, used);
  return keys;
}

}  // namespace

bool InteractiveTerminal() { return isatty(kIn) && isatty(kOut); }

Result<std::optional<std::vector<size_t>>> RunMenu(Menu& menu) {
  RawMode raw;
  FP_RETURN_IF_ERROR(raw.Enter());
  size_t drawn = 0;  // lines drawn last time, to move back over them
  std::string pending;
  for (;;) {
    drawn = DrawMenu(menu, drawn);

    // Wait for a key or a signal (its handler writes to the wake pipe).
    pollfd fds[2] = {{kIn, POLLIN, 0}, {raw.wake_fd(), POLLIN, 0}};
    int ready = poll(fds, 2, -1);
    if (g_signal) return std::optional<std::vector<size_t>>();  // the destructor re-raises
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      return IoError(std::string("cannot wait for the terminal: ") + std::strerror(errno));
    }
    char buf[64];
    ssize_t n = read(kIn, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return IoError(n == 0 ? std::string("the terminal closed")
                            : std::string("cannot read the terminal: ") + std::strerror(errno));
    }
    pending.append(buf, static_cast<size_t>(n));
    for (Key key : DecodePendingKeys(pending)) {
      Menu::Outcome outcome = menu.Handle(key);
      if (outcome == Menu::Outcome::kContinue) continue;
      // Leave the menu's title and a one-line account of the choice on the screen.
      std::string summary;
      if (outcome == Menu::Outcome::kConfirmed) {
        for (size_t i : menu.Chosen()) summary += (summary.empty() ? "" : ", ") + menu.item(i);
      } else {
        summary = "(cancelled)";
      }
      WriteAll("\x1b[" + std::to_string(drawn) + "F\x1b[J" + menu.title() + ": " + summary +
               "\r\n");
      if (outcome == Menu::Outcome::kCancelled) return std::optional<std::vector<size_t>>();
      return std::optional<std::vector<size_t>>(menu.Chosen());
    }
  }
}

}  // namespace footprint::tui
