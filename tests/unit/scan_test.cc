// Parameter scans, and the words of a command line split as a shell splits them.
#include "footprint/scan.h"

#include <gtest/gtest.h>

#include "util/strings.h"

namespace footprint {
namespace {

using Values = std::vector<std::string>;

TEST(RangeParameter, IntegersDecimalsAndTheEnd) {
  EXPECT_EQ(RangeParameter("n", "1", "4")->values, Values({"1", "2", "3", "4"}));
  EXPECT_EQ(RangeParameter("n", "1", "4", "2")->values, Values({"1", "3"}));
  // 0.1 + 2 * 0.1 is 0.30000000000000004: written with the step's one decimal, and 0.3 counted.
  EXPECT_EQ(RangeParameter("x", "0.1", "0.3", "0.1")->values, Values({"0.1", "0.2", "0.3"}));
  EXPECT_EQ(RangeParameter("x", "0", "1", "0.25")->values,
            Values({"0.00", "0.25", "0.50", "0.75", "1.00"}));
  EXPECT_EQ(RangeParameter("x", "-2", "-1")->values, Values({"-2", "-1"}));
  EXPECT_EQ(RangeParameter("x", "5", "5")->values, Values({"5"}));
}

TEST(RangeParameter, RefusedWithTheReason) {
  auto message = [](Result<ScanParameter> r) { return r.status().message(); };
  EXPECT_EQ(message(RangeParameter("n", "4", "1")), "-P n: MIN 4 is above MAX 1");
  EXPECT_EQ(message(RangeParameter("n", "1", "4", "0")), "-P n: the step -D must be above 0");
  EXPECT_EQ(message(RangeParameter("n", "1", "four")), "-P n: MAX 'four' is not a decimal number");
  EXPECT_EQ(message(RangeParameter("n", "1", "1e3")), "-P n: MAX '1e3' is not a decimal number");
  EXPECT_EQ(message(RangeParameter("n", "1", "100000")), "-P n: 100000 values, more than 1000");
  EXPECT_NE(message(RangeParameter("2x", "1", "2")).find("must be letters, digits and _"),
            std::string::npos);
  EXPECT_NE(message(RangeParameter("a-b", "1", "2")).find("parameter name 'a-b'"),
            std::string::npos);
}

TEST(ListParameter, ValuesAsGiven) {
  EXPECT_EQ(ListParameter("cc", "gcc,clang")->values, Values({"gcc", "clang"}));
  EXPECT_EQ(ListParameter("cc", "gcc")->values, Values({"gcc"}));
  EXPECT_EQ(ListParameter("cc", "gcc,,clang").status().message(),
            "-L cc gcc,,clang: an empty value (list them as a,b,c)");
  EXPECT_EQ(ListParameter("cc", "").status().code(), StatusCode::kInvalidArgument);
}

TEST(ScanCombinations, TheFirstParameterVariesSlowest) {
  auto combos =
      ScanCombinations({*ListParameter("cc", "gcc,clang"), *RangeParameter("n", "1", "3")});
  ASSERT_TRUE(combos.ok());
  ASSERT_EQ(combos->size(), 6u);
  EXPECT_EQ((*combos)[0], (std::map<std::string, std::string>{{"cc", "gcc"}, {"n", "1"}}));
  EXPECT_EQ((*combos)[2], (std::map<std::string, std::string>{{"cc", "gcc"}, {"n", "3"}}));
  EXPECT_EQ((*combos)[3], (std::map<std::string, std::string>{{"cc", "clang"}, {"n", "1"}}));
  EXPECT_EQ(ScanCombinations({})->size(), 1u);  // no scan: the one run, as it is
  EXPECT_EQ(
      ScanCombinations({*ListParameter("n", "1"), *ListParameter("n", "2")}).status().message(),
      "parameter 'n' is scanned twice");
  EXPECT_EQ(ScanCombinations({*RangeParameter("a", "1", "100"), *RangeParameter("b", "1", "11")})
                .status()
                .message(),
            "the scan has more than 1000 combinations of parameters");
}

TEST(SubstituteParameters, OnlyNamedParametersAreReplaced) {
  const std::map<std::string, std::string> v = {{"n", "4"}, {"cc", "gcc"}};
  EXPECT_EQ(SubstituteParameters("{cc} -j{n} {n}", v), "gcc -j4 4");
  EXPECT_EQ(SubstituteParameters("awk '{print $1}' {n}", v), "awk '{print $1}' 4");
  EXPECT_EQ(SubstituteParameters("{{n}} {x} {", v), "{4} {x} {");
  EXPECT_EQ(SubstituteParameters("", v), "");
}

TEST(SplitShellWords, AsAShellSplitsThem) {
  struct Case {
    std::string line;
    Values words;
  };
  const Case cases[] = {
      {"", {}},
      {"  --batch-size   128 ", {"--batch-size", "128"}},
      {"--name 'my run' --lr 0.1", {"--name", "my run", "--lr", "0.1"}},
      {R"(--msg "say \"hi\" \$HOME" x)", {"--msg", R"(say "hi" $HOME)", "x"}},
      {R"(a\ b 'c"d' "e'f")", {"a b", "c\"d", "e'f"}},
      {R"(--path="/tmp/a b"/c)", {"--path=/tmp/a b/c"}},
      {"'' x''y \"\"", {"", "xy", ""}},
      {R"("a\nb" 'c\n')", {R"(a\nb)", R"(c\n)"}},  // in "...": only \" \\ \$ \` escape
      {"a\\\nb \"c\\\nd\"", {"ab", "cd"}},         // backslash-newline joins lines
      {"echo a\\", {"echo", "a\\"}},               // a trailing backslash is kept
  };
  for (const Case& c : cases) {
    auto got = SplitShellWords(c.line);
    ASSERT_TRUE(got.ok()) << c.line << ": " << got.status().message();
    EXPECT_EQ(*got, c.words) << c.line;
  }
  EXPECT_EQ(SplitShellWords("echo 'open").status().message(), "unterminated ' in 'echo 'open'");
  EXPECT_EQ(SplitShellWords("x \"a\\\"").status().message(), "unterminated \" in 'x \"a\\\"'");
}

}  // namespace
}  // namespace footprint
