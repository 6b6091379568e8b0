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

TEST(Inert, ControlCharactersBecomeVisibleEscapes) {
  EXPECT_EQ(Inert("a\x1b]0;pwn\x07"
                  "b"),
            "a\\e]0;pwn\\x07b");
  EXPECT_EQ(Inert("\x1b[2J\n\t\r\x7f"), "\\e[2J\\n\\t\\r\\x7f");
  // C1 controls, U+0080..U+009F, are two bytes in UTF-8; 0x9b alone is CSI to 8-bit terminals.
  EXPECT_EQ(Inert("x\xc2\x9b"
                  "31m\xc2\x80\xc2\x9f"),
            "x\\x9b31m\\x80\\x9f");
}

TEST(Inert, BidirectionalControlsBecomeVisibleEscapes) {
  EXPECT_EQ(Inert("evil\u202etxt.exe"), "evil\\u202etxt.exe");
  const std::pair<const char*, const char*> cases[] = {
      {"\u061c", "\\u061c"}, {"\u200e", "\\u200e"}, {"\u200f", "\\u200f"}, {"\u202a", "\\u202a"},
      {"\u202d", "\\u202d"}, {"\u2066", "\\u2066"}, {"\u2069", "\\u2069"}};
  for (const auto& [text, inert] : cases) EXPECT_EQ(Inert(text), inert);
  // Their neighbours are ordinary characters.
  EXPECT_EQ(Inert("\u2029\u202f\u2065\u206a"), "\u2029\u202f\u2065\u206a");
}

TEST(Inert, InvalidUtf8IsShownByteByByte) {
  EXPECT_EQ(Inert("a\xff"
                  "b"),
            "a\\xffb");
  EXPECT_EQ(Inert("\x9b"), "\\x9b");                             // a stray continuation byte
  EXPECT_EQ(Inert("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(Inert("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(Inert("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // beyond U+10FFFF
  EXPECT_EQ(Inert("\xe2\x80"), "\\xe2\\x80");                    // cut short
}

TEST(Inert, KeepsPrintableTextAndIsItsOwnInert) {
  const std::string text = "résumé µs ▁█ 日本 🙂 a\\eb 'q'";
  EXPECT_EQ(Inert(text), text);
  for (const char* hostile : {"\x1b]0;t\x07", "\u202e\xc2\x9b\xff\n", "\xe2\x80"}) {
    EXPECT_EQ(Inert(Inert(hostile)), Inert(hostile));
  }
  EXPECT_EQ(QuotedInert("a\u202eb"), "'a\\u202eb'");
}

}  // namespace
}  // namespace footprint
