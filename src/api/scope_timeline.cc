#include "api/scope_timeline.h"

#include <cstdint>

#include "util/file.h"
#include "util/strings.h"

namespace footprint {

bool ScopeTimeline::CounterIsTheClock(const std::string& sys_root) {
#if defined(__x86_64__)
  auto source =
      ReadWholeFile(sys_root + "/devices/system/clocksource/clocksource0/current_clocksource");
  return source.ok() && Trim(*source) == "tsc";
#else
  (void)sys_root;
  return false;
#endif
}

ScopeTimeline::ScopeTimeline(bool use_counter) : use_counter_(use_counter) {
  if (use_counter_) last_ = ReadPair();
}

ScopeTimeline::Pair ScopeTimeline::ReadPair() {
  // The counter on both sides of the clock: its reading is the middle of the two. A thread
  // preempted between them would put the middle far off, so the narrowest of a few tries is
  // kept.
  Pair best;
  int64_t best_width = INT64_MAX;
  for (int attempt = 0; attempt < 5; ++attempt) {
    const int64_t before = Read(true);
    const int64_t ns = MonotonicNs();
    const int64_t after = Read(true);
    if (after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, ns};
    }
  }
  return best;
}

ScopeTimeline::Mapping ScopeTimeline::Advance() {
  if (!use_counter_) return {};
  const Pair now = ReadPair();
  if (now.counter > last_.counter) {
    ns_per_tick_ =
        static_cast<double>(now.ns - last_.ns) / static_cast<double>(now.counter - last_.counter);
  }
  Mapping m{false, last_, ns_per_tick_};
  last_ = now;
  return m;
}

}  // namespace footprint
