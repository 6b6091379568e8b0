#include <gtest/gtest.h>

#include "run/container.h"

namespace footprint {
namespace {

TEST(ParseContainerCommand, FindsRunAfterGlobalOptionsAndTheImageAfterItsOptions) {
  auto c = ParseContainerCommand({"/usr/bin/podman", "--runtime", "/x/runc", "--log-level=debug",
                                  "run", "--rm", "-dit", "-v", "/a:/b", "--name=n", "img:1",
                                  "/bin/work", "-d"});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->engine, "podman");
  EXPECT_EQ(c->run_word, 4u);
  EXPECT_TRUE(c->detached);
  EXPECT_EQ(c->image, "img:1");
}

TEST(ParseContainerCommand, NotAContainerStart) {
  EXPECT_FALSE(ParseContainerCommand({"podman", "ps"}).has_value());
  EXPECT_FALSE(ParseContainerCommand({"runme", "run", "x"}).has_value());
  EXPECT_FALSE(ParseContainerCommand({}).has_value());
}

TEST(ParseContainerCommand, OwnCgroupOptionsAndDetachValues) {
  auto c = ParseContainerCommand(
      {"docker", "container", "run", "--detach=false", "--cgroup-parent", "/mine", "img"});
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->detached);
  EXPECT_EQ(c->cgroup_parent, "/mine");
  EXPECT_EQ(c->image, "img");
  auto m = ParseContainerCommand({"nerdctl", "--cgroup-manager", "systemd", "run", "img"});
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->cgroup_manager, "systemd");
  EXPECT_EQ(m->image, "img");
}

}  // namespace
}  // namespace footprint
