#include "util/strings.h"

#include <gtest/gtest.h>

namespace footprint {
namespace {

TEST(ParseDurationNs, Accepted) {
  const std::pair<const char*, int64_t> cases[] = {
      {"100ms", 100'000'000}, {"1.5s", 1'500'000'000}, {"250us", 250'000}, {"1", 1'000'000'000},
      {"0.01", 10'000'000},   {"2m", 120'000'000'000}, {"7ns", 7},         {" 10ms ", 10'000'000},
  };
  for (auto [text, ns] : cases) {
    auto r = ParseDurationNs(text);
    ASSERT_TRUE(r.ok()) << text;
    EXPECT_EQ(*r, ns) << text;
  }
}

TEST(ParseDurationNs, RejectedWithHelpfulMessage) {
  for (const char* text : {"", "ms", "10 parsecs", "-5ms", "1.2.3s", "fast"}) {
    auto r = ParseDurationNs(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find("100ms"), std::string::npos) << r.status().message();
  }
}

// int64 nanoseconds hold 292 years: beyond, no wrap-around into a negative or tiny duration.
TEST(ParseDurationNs, TooLongIsRefusedNotWrapped) {
  EXPECT_EQ(*ParseDurationNs("9000000000"), int64_t{9'000'000'000} * 1'000'000'000);
  for (const char* text : {"9223372037", "99999999999999999999", "153722867281min"}) {
    auto r = ParseDurationNs(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find("too long a duration"), std::string::npos)
        << r.status().message();
  }
}

TEST(Format, BytesAndDurations) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(3.0 * (1 << 30)), "3.0 GiB");
  EXPECT_EQ(FormatDuration(0.0025), "2.50 ms");
  EXPECT_EQ(FormatDuration(12.5e-6), "12.50 µs");
  EXPECT_EQ(FormatDuration(2.5), "2.500 s");
  EXPECT_EQ(FormatDuration(90), "1.50 min");
}

TEST(ParseKeyValue, SplitsAtFirstEquals) {
  auto kv = ParseKeyValue("expr=a=b", "--param");
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->first, "expr");
  EXPECT_EQ(kv->second, "a=b");
  EXPECT_FALSE(ParseKeyValue("novalue", "--tag").ok());
  EXPECT_FALSE(ParseKeyValue("=x", "--tag").ok());
}

}  // namespace
}  // namespace footprint
