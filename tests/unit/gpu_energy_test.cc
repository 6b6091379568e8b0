// A GPU's energy and the tree's share of it, apart from any vendor library.
#include "probe/gpu_energy.h"

#include <gtest/gtest.h>

namespace footprint {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(DeviceEnergy, CounterDifferencesAndARestartedCounter) {
  DeviceEnergy e(/*counter=*/true);
  EXPECT_FALSE(e.started());
  e.AddCounter(0, 5'000);  // the first reading is the zero
  e.AddCounter(100 * kMs, 7'500);
  EXPECT_DOUBLE_EQ(e.joules(), 2.5);
  e.AddCounter(200 * kMs, 1'000);  // the driver reloaded: restart from the new value
  e.AddCounter(300 * kMs, 3'000);
  EXPECT_DOUBLE_EQ(e.joules(), 4.5);
}

TEST(DeviceEnergy, PowerIsIntegratedByTrapezoids) {
  DeviceEnergy e(/*counter=*/false);
  e.AddPower(0, 100);
  e.AddPower(500 * kMs, 200);   // 0.5 s x 150 W
  e.AddPower(1500 * kMs, 200);  // 1 s x 200 W
  EXPECT_DOUBLE_EQ(e.joules(), 275);
  EXPECT_FALSE(e.Period());
  nlohmann::json d;
  e.Describe(true, d);
  EXPECT_EQ(d["energy_source"], "power integration");
  EXPECT_FALSE(d.contains("energy_counter_changes"));
}

TEST(DeviceEnergy, UpdatePeriodFromTheReadingsThatSawAChange) {
  // A counter updated every 250 ms, read every 100 ms: changes 200 or 300 ms apart.
  DeviceEnergy e(/*counter=*/true);
  for (int64_t k = 0; k <= 40; ++k) e.AddCounter(k * 100 * kMs, (k * 100 / 250) * 1000);
  auto p = e.Period();
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->upper_bound);
  EXPECT_NEAR(p->ms, 250, 10);
  // Changes at every reading: only an upper bound (the reading interval).
  DeviceEnergy fast(/*counter=*/true);
  for (int64_t k = 0; k <= 10; ++k) fast.AddCounter(k * 100 * kMs, k * 1000);
  ASSERT_TRUE(fast.Period());
  EXPECT_TRUE(fast.Period()->upper_bound);
  EXPECT_DOUBLE_EQ(fast.Period()->ms, 100);
}

TEST(TreeEnergy, EachIncrementTimesTheShareOfItsInterval) {
  TreeEnergy t;
  EXPECT_TRUE(t.Attribute(10, std::nullopt, false, ""));  // the start: nothing to share yet
  EXPECT_TRUE(t.Attribute(20, 0.75, false, ""));
  EXPECT_DOUBLE_EQ(t.joules(), 7.5);
  // A passing failure: the increment waits and is shared with the next share.
  EXPECT_FALSE(t.Attribute(30, std::nullopt, true, "process list failed"));
  EXPECT_TRUE(t.unknown().empty());
  EXPECT_TRUE(t.Attribute(40, 0.5, false, ""));
  EXPECT_DOUBLE_EQ(t.joules(), 17.5);  // 7.5 + (40 - 20) x 0.5
}

TEST(TreeEnergy, AShareThatCannotBeToldMakesItUnknownForGood) {
  TreeEnergy t;
  t.Attribute(0, std::nullopt, false, "");
  EXPECT_FALSE(t.Attribute(5, std::nullopt, false, "shared, no per-process figures"));
  EXPECT_EQ(t.unknown(), "shared, no per-process figures");
  EXPECT_FALSE(t.Attribute(9, 1.0, false, ""));
  EXPECT_DOUBLE_EQ(t.joules(), 0);
}

}  // namespace
}  // namespace footprint
