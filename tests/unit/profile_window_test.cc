#include "footprint/profile_window.h"

#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>

#include "footprint/store.h"
#include "test_util.h"

namespace footprint {
namespace {

using testing::TempDir;

void SleepMs(int ms) {
  timespec ts{0, ms * 1'000'000L};
  nanosleep(&ts, nullptr);
}

// wait 2, warm-up 1, active 2 over 8 steps of 5 ms; the recorded steps (3 and 4) take 20 ms
// more each: the scope profile:train spans exactly them, and the added time is theirs.
TEST(ProfileWindow, RecordsTheScheduledStepsOnTheTimeline) {
  TempDir dir;
  BenchmarkOptions o;
  o.db = dir.File("fp.db");
  o.join = false;
  auto bm = Benchmark::Open(o);
  ASSERT_TRUE(bm.ok()) << bm.status().message();
  auto w = ProfileWindow::Open(bm->get(), "train", {.wait = 2, .warmup = 1, .active = 2});
  ASSERT_TRUE(w.ok());
  std::vector<int64_t> begun = {(*bm)->NowNs()};
  for (int step = 0; step < 8; ++step) {
    SleepMs((*w)->recording() ? 25 : 5);
    (*w)->Step();
    begun.push_back((*bm)->NowNs());
  }
  EXPECT_EQ((*w)->recorded_steps(), (std::vector<int64_t>{3, 4}));
  w->reset();
  const std::string run_id = (*bm)->run_id();
  ASSERT_TRUE((*bm)->Close().ok());
  auto store = OpenStore(o.db, {.read_only = true});
  ASSERT_TRUE(store.ok());
  auto scopes = (*store)->ListScopes(run_id);
  ASSERT_TRUE(scopes.ok());
  ASSERT_EQ(scopes->size(), 1u);
  const ScopeRecord& s = scopes->front();
  EXPECT_EQ(s.name, "profile:train");
  // Opened as step 3 began, closed as step 5 began: inside Step(), just before the test read
  // the clock after it.
  EXPECT_GE(s.start_ns, begun[3] - 2'000'000);
  EXPECT_LE(s.start_ns, begun[3]);
  ASSERT_TRUE(s.end_ns.has_value());
  EXPECT_GE(*s.end_ns, begun[5] - 2'000'000);
  EXPECT_LE(*s.end_ns, begun[5]);
  // The added time from the steps' own durations: warm-up (2) and recorded (3, 4) less three
  // times the median of the others.
  std::vector<double> d;
  for (size_t k = 0; k + 1 < begun.size(); ++k) d.push_back((begun[k + 1] - begun[k]) / 1e9);
  std::vector<double> others = {d[0], d[1], d[5], d[6], d[7]};
  std::sort(others.begin(), others.end());
  const double expected = d[2] + d[3] + d[4] - 3 * others[2];
  auto values = (*store)->ListValues(run_id);
  ASSERT_TRUE(values.ok());
  ASSERT_EQ(values->size(), 1u);
  EXPECT_EQ(values->front().name, "profiler.window_added_s");
  EXPECT_NEAR(*values->front().value, expected, 0.002);
  EXPECT_GT(*values->front().value, 0.030);  // the two recorded steps' extra 20 ms each
}

TEST(ProfileWindow, RefusesAScheduleWithoutActiveSteps) {
  auto w = ProfileWindow::Open(nullptr, "x", {.active = 0});
  EXPECT_FALSE(w.ok());
  auto idle = ProfileWindow::Open(nullptr, "x", {.wait = 0, .warmup = 0, .active = 1});
  ASSERT_TRUE(idle.ok());
  EXPECT_TRUE((*idle)->recording());
}

}  // namespace
}  // namespace footprint
