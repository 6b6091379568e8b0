#include "cli/progress.h"

#include <chrono>
#include <iostream>

#include "util/clock.h"
#include "util/strings.h"

namespace footprint::cli {
namespace {

constexpr std::string_view kErase = "\r\033[K";  // back to the line's start, and clear it
constexpr int kBarWidth = 24;

}  // namespace

Progress::Progress(int total, bool live, std::string unit, int first_draw_ms)
    : total_(total),
      unit_(std::move(unit)),
      first_draw_ms_(first_draw_ms),
      start_ns_(MonotonicNs()),
      last_done_ns_(start_ns_) {
  if (live && total > 0) thread_ = std::thread([this] { Redraw(); });
}

Progress::~Progress() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  if (drawn_) std::cerr << kErase << std::flush;
}

void Progress::Done() {
  std::lock_guard<std::mutex> lock(mu_);
  ++done_;
  last_done_ns_ = MonotonicNs();
}

int Progress::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void Progress::Print(std::string_view lines) {
  std::lock_guard<std::mutex> lock(mu_);
  if (drawn_) std::cerr << kErase;
  std::cerr << lines;
  if (drawn_) std::cerr << BarLocked();
  std::cerr << std::flush;
}

std::string Progress::Eta() const {
  std::lock_guard<std::mutex> lock(mu_);
  return EtaLocked();
}

std::string Progress::EtaLocked() const {
  if (done_ == 0 || done_ >= total_) return "";
  const double per_run_s = static_cast<double>(last_done_ns_ - start_ns_) / 1e9 / done_;
  const double into_run_s = static_cast<double>(MonotonicNs() - last_done_ns_) / 1e9;
  return "ETA " + FormatDuration(std::max(0.0, per_run_s * (total_ - done_) - into_run_s));
}

std::string Progress::BarLocked() const {
  const int filled = kBarWidth * done_ / total_;
  std::string bar = "footprint: [";
  bar.append(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kBarWidth - filled), '-');
  bar += "] " + std::to_string(done_) + "/" + std::to_string(total_) + " " + unit_;
  if (std::string eta = EtaLocked(); !eta.empty()) bar += ", " + eta;
  return bar;
}

void Progress::Redraw() {
  std::unique_lock<std::mutex> lock(mu_);
  wake_.wait_for(lock, std::chrono::milliseconds(first_draw_ms_), [this] { return stop_; });
  while (!stop_) {
    std::cerr << kErase << BarLocked() << std::flush;
    drawn_ = true;
    wake_.wait_for(lock, std::chrono::milliseconds(200));
  }
}

ProgressFn FollowWith(std::unique_ptr<Progress>& bar, std::string unit, bool live) {
  if (!live) return {};
  return [&bar, unit = std::move(unit)](size_t done, size_t total) {
    if (done == 0) {
      bar = std::make_unique<Progress>(static_cast<int>(total), true, unit, 500);
    } else if (bar) {
      bar->Done();
    }
  };
}

}  // namespace footprint::cli
