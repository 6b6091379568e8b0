#include "footprint/profile_window.h"

#include <dlfcn.h>

#include <algorithm>

namespace footprint {

Result<std::unique_ptr<ProfileWindow>> ProfileWindow::Open(Benchmark* bm, std::string name,
                                                           ProfileSchedule schedule, Env& env) {
  if (schedule.wait < 0 || schedule.warmup < 0 || schedule.active < 1 || schedule.repeat < 0) {
    return InvalidArgument(
        "a profile window needs wait, warmup and repeat from 0 and active "
        "from 1");
  }
  std::unique_ptr<ProfileWindow> w(new ProfileWindow(bm, std::move(name), schedule, env));
  w->Follow();
  return w;
}

ProfileWindow::ProfileWindow(Benchmark* bm, std::string name, ProfileSchedule schedule, Env& env)
    : bm_(bm), name_(std::move(name)), schedule_(schedule), env_(env) {
  std::string error, path;
  if (void* lib = env.OpenLibrary("libnvToolsExt.so.1", &error, &path)) {
    range_start_ = reinterpret_cast<uint64_t (*)(const char*)>(dlsym(lib, "nvtxRangeStartA"));
    range_end_ = reinterpret_cast<void (*)(uint64_t)>(dlsym(lib, "nvtxRangeEnd"));
    if (range_end_ == nullptr) range_start_ = nullptr;
  }
  begun_ns_.push_back(bm_ ? bm_->NowNs() : env_.MonotonicNs());
}

ProfileWindow::~ProfileWindow() { Finish(); }

ProfileWindow::Phase ProfileWindow::PhaseOf(int64_t step) const {
  const int64_t cycle = schedule_.wait + schedule_.warmup + schedule_.active;
  if (schedule_.repeat > 0 && step >= cycle * schedule_.repeat) return Phase::kIdle;
  const int64_t at = step % cycle;
  if (at < schedule_.wait) return Phase::kIdle;
  return at < schedule_.wait + schedule_.warmup ? Phase::kWarmup : Phase::kRecord;
}

bool ProfileWindow::recording() const {
  return PhaseOf(static_cast<int64_t>(begun_ns_.size()) - 1) == Phase::kRecord;
}

void ProfileWindow::Step() {
  begun_ns_.push_back(bm_ ? bm_->NowNs() : env_.MonotonicNs());
  Follow();
}

void ProfileWindow::Follow() {
  const int64_t step = static_cast<int64_t>(begun_ns_.size()) - 1;
  const Phase phase = PhaseOf(step);
  in_window_.push_back(phase != Phase::kIdle);
  if (phase == Phase::kRecord) recorded_.push_back(step);
  SetRange(phase == Phase::kRecord);
}

void ProfileWindow::SetRange(bool open) {
  if (open == range_open_) return;
  range_open_ = open;
  if (open) {
    if (range_start_) range_id_ = range_start_("profile");
    if (bm_) scope_ = bm_->BeginScope(ScopeName("profile:" + name_));
    return;
  }
  if (range_start_) range_end_(range_id_);
  if (bm_) bm_->EndScope(scope_);
}

void ProfileWindow::Finish() {
  if (finished_) return;
  finished_ = true;
  SetRange(false);
  if (!bm_) return;
  std::vector<double> inside, outside;
  for (size_t k = 0; k + 1 < begun_ns_.size(); ++k) {
    const double d = static_cast<double>(begun_ns_[k + 1] - begun_ns_[k]) / 1e9;
    (in_window_[k] ? inside : outside).push_back(d);
  }
  if (inside.empty() || outside.empty()) return;
  std::sort(outside.begin(), outside.end());
  const size_t n = outside.size();
  const double median = n % 2 ? outside[n / 2] : (outside[n / 2 - 1] + outside[n / 2]) / 2;
  double added = 0;
  for (double d : inside) added += d - median;
  bm_->Log("profiler.window_added_s", added);
}

}  // namespace footprint
