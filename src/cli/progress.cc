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

Progress::Progress(int total, bool live)
    : total_(total), start_ns_(MonotonicNs()), last_done_ns_(start_ns_) {
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
  std::cerr << kErase << std::flush;
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
  if (thread_.joinable()) std::cerr << kErase;
  std::cerr << lines;
  if (thread_.joinable()) std::cerr << BarLocked();
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
  bar += "] " + std::to_string(done_) + "/" + std::to_string(total_) + " runs";
  if (std::string eta = EtaLocked(); !eta.empty()) bar += ", " + eta;
  return bar;
}

void Progress::Redraw() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    std::cerr << kErase << BarLocked() << std::flush;
    wake_.wait_for(lock, std::chrono::milliseconds(200));
  }
}

}  // namespace footprint::cli
