// CallBudget spaces a call by its cost on the Env's clock (driven here: each call costs exactly
// what it advances the clock by); a larger share lets a caller read sooner.
#include "util/call_budget.h"

#include <gtest/gtest.h>

#include "fake_env.h"
#include "util/clock.h"

namespace footprint {
namespace {

constexpr int64_t kSecondNs = 1'000'000'000;

// Makes a call that costs `cost_ns` of the driven clock at `now_ns`.
void CallCosting(CallBudget& budget, FakeEnv& env, int64_t now_ns, int64_t cost_ns) {
  budget.Make(env, now_ns, [&] { env.Advance(cost_ns); });
}

TEST(CallBudgetTest, ACallIsPutOffByItsCostOverTheShare) {
  // 1 % of a core: a 4 ms NVML call waits 400 ms.
  FakeEnv env;
  CallBudget budget(0.01);
  EXPECT_TRUE(budget.Due(0));
  CallCosting(budget, env, 0, 4 * kNsPerMs);
  EXPECT_FALSE(budget.Due(400 * kNsPerMs - 1));
  EXPECT_TRUE(budget.Due(400 * kNsPerMs));
  EXPECT_EQ(budget.longest_gap_ms(), 400);
  // What the call returns is handed back.
  EXPECT_EQ(budget.Make(env, 400 * kNsPerMs, [] { return 7; }), 7);
}

TEST(CallBudgetTest, OneSlowCallDoesNotPutTheNextOnesOff) {
  // The lower median of the last five costs: an H100's energy reading once took 22 ms where the
  // others took 4; the gap stays 400 ms. Three slow calls of five make it the typical cost.
  FakeEnv env;
  CallBudget budget(0.01);
  CallCosting(budget, env, 0, 4 * kNsPerMs);
  CallCosting(budget, env, 400 * kNsPerMs, 4 * kNsPerMs);
  CallCosting(budget, env, 800 * kNsPerMs, 22 * kNsPerMs);
  EXPECT_FALSE(budget.Due(1200 * kNsPerMs - 1));
  EXPECT_TRUE(budget.Due(1200 * kNsPerMs));
  CallCosting(budget, env, 1200 * kNsPerMs, 22 * kNsPerMs);
  CallCosting(budget, env, 1200 * kNsPerMs, 22 * kNsPerMs);
  EXPECT_FALSE(budget.Due(3400 * kNsPerMs - 1));
  EXPECT_TRUE(budget.Due(3400 * kNsPerMs));
}

TEST(CallBudgetTest, TheGapNeverExceedsTheLongestGap) {
  FakeEnv env;
  CallBudget budget(kKernelReadShare, kKernelReadLongestGapNs);
  CallCosting(budget, env, 0, 10 * kNsPerMs);  // 4 s at a quarter of a percent
  EXPECT_TRUE(budget.Due(kKernelReadLongestGapNs));
  EXPECT_EQ(budget.longest_gap_ms(), 100);
}

TEST(CallBudgetTest, ALargerShareIsDueSoonerThanTheBudgetsOwn) {
  // A 2 ms call kept to a millionth of a core waits 2000 s; at a whole core it waits its cost.
  FakeEnv env;
  CallBudget budget(1e-6);
  CallCosting(budget, env, 0, 2 * kNsPerMs);
  const int64_t later = 2 * kNsPerMs;
  EXPECT_FALSE(budget.Due(later));
  EXPECT_FALSE(budget.DueAtShare(later, 1e-6));
  EXPECT_TRUE(budget.DueAtShare(later, 1.0));
  EXPECT_FALSE(budget.DueAtShare(later - 1, 1.0));
  EXPECT_TRUE(budget.Due(2000 * kSecondNs));
  budget.Lift();
  EXPECT_TRUE(budget.DueAtShare(0, 1e-6));  // the last pass reads everything
}

}  // namespace
}  // namespace footprint
