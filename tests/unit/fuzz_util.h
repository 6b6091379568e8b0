// The seeded mutator that every fuzz target shares (fuzz_*_test.cc), run for a fixed budget in
// every test build (ASan and UBSan included). Each target mutates the seeds of its committed
// corpus (tests/fuzz/corpus/TARGET/, one input a file) and checks that whatever the bytes, the
// code under test ends in a result or in one printable error line: never a crash, an
// exception, a hang or an allocation the input multiplied. FP_FUZZ_ITERATIONS raises the
// budget by hand.
#ifndef FOOTPRINT_TESTS_UNIT_FUZZ_UTIL_H_
#define FOOTPRINT_TESTS_UNIT_FUZZ_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "footprint/status.h"
#include "util/strings.h"

namespace footprint::fuzz {

// Pieces that reach parsers' limits and corners, whatever the format.
inline const std::vector<std::string>& CommonTokens() {
  static const std::vector<std::string> tokens = {"4294967297",
                                                  "99999999999999999999",
                                                  "-1",
                                                  "0",
                                                  "100000000",
                                                  "1e9",
                                                  "9223372036854775807",
                                                  "\"",
                                                  "'",
                                                  ",",
                                                  ":",
                                                  "\n",
                                                  "- ",
                                                  "[",
                                                  "]",
                                                  "{",
                                                  "}",
                                                  "#",
                                                  "\x1b]0;t\a",
                                                  "\t",
                                                  "\r\n",
                                                  std::string(1, '\0'),
                                                  "\xe2\x80\xae",
                                                  "nan",
                                                  "inf"};
  return tokens;
}

// `text` with 1 to 4 random edits: a byte changed, a token inserted, a span deleted, a line
// repeated, the text cut short, or a number replaced by a huge one. `tokens` adds the
// format's own pieces to CommonTokens().
inline std::string Mutate(std::string text, std::mt19937& rng,
                          const std::vector<std::string>& tokens = {}) {
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  const auto& common = CommonTokens();
  auto token = [&]() -> const std::string& {
    const size_t i = pick(common.size() + tokens.size());
    return i < common.size() ? common[i] : tokens[i - common.size()];
  };
  const int edits = 1 + static_cast<int>(pick(4));
  for (int e = 0; e < edits; ++e) {
    const size_t at = text.empty() ? 0 : pick(text.size());
    switch (pick(6)) {
      case 0:  // a byte changed
        if (!text.empty()) text[at] = static_cast<char>(pick(256));
        break;
      case 1:  // a token inserted
        text.insert(at, token());
        break;
      case 2:  // a span deleted
        text.erase(at, pick(16) + 1);
        break;
      case 3: {  // a line repeated
        const size_t begin = text.rfind('\n', at), end = text.find('\n', at);
        const size_t from = begin == std::string::npos ? 0 : begin + 1;
        const std::string line = text.substr(from, end == std::string::npos ? end : end - from);
        text.insert(from, line + "\n");
        break;
      }
      case 4:  // cut short
        text.resize(at);
        break;
      default:  // a number replaced by a huge one
        if (size_t d = text.find_first_of("0123456789", at); d != std::string::npos) {
          text.replace(d, 1, common[pick(2)]);
        }
        break;
    }
  }
  return text;
}

// The budget: FP_FUZZ_ITERATIONS when set, else `fallback`.
inline int Iterations(int fallback) {
  const char* v = std::getenv("FP_FUZZ_ITERATIONS");
  return v ? std::atoi(v) : fallback;
}

// The committed seeds of one target (tests/fuzz/corpus/TARGET/), in file-name order; a target
// without seeds fails, so that a lost corpus cannot make its fuzzing vacuous.
inline std::vector<std::string> Corpus(const std::string& target) {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path dir = std::filesystem::path(FP_FUZZ_CORPUS) / target;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> seeds;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    seeds.push_back(text.str());
  }
  EXPECT_FALSE(seeds.empty()) << "no seeds in " << dir;
  return seeds;
}

// One line a person can read: no newline, no escape or other control character.
inline void ExpectOneInertLine(const Status& st, const std::string& input) {
  for (char c : st.message()) {
    const auto u = static_cast<unsigned char>(c);
    ASSERT_FALSE(u < 0x20 || u == 0x7f)
        << "control character " << int{u} << " in: " << Inert(st.message()) << "\ninput:\n"
        << Inert(input);
  }
}

}  // namespace footprint::fuzz

#endif  // FOOTPRINT_TESTS_UNIT_FUZZ_UTIL_H_
