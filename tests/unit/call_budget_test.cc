// CallBudget spaces a call by its measured cost; a larger share lets a caller read sooner.
#include "util/call_budget.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace footprint {
namespace {

constexpr int64_t kSecondNs = 1'000'000'000;

TEST(CallBudgetTest, ALargerShareIsDueSoonerThanTheBudgetsOwn) {
  // A call of at least 2 ms kept to a millionth of a core waits at least 2000 s; at a whole
  // core it waits its own cost, however slow this machine is (below 1000 s).
  CallBudget budget(1e-6);
  const int64_t t0 = 0;
  EXPECT_TRUE(budget.Due(t0));
  budget.Make(t0, [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
  const int64_t later = t0 + 1000 * kSecondNs;
  EXPECT_FALSE(budget.Due(later));
  EXPECT_FALSE(budget.DueAtShare(later, 1e-6));
  EXPECT_TRUE(budget.DueAtShare(later, 1.0));
  budget.Lift();
  EXPECT_TRUE(budget.DueAtShare(t0, 1e-6));  // the last pass reads everything
}

}  // namespace
}  // namespace footprint
