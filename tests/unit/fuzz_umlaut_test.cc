// Fuzzing UMLAUT databases through footprint import (fuzz_util.h). Each seed of
// tests/fuzz/corpus/umlaut/ is SQL, one statement a line, that writes an UMLAUT database; an
// iteration mutates either that text (the JSON documents, types, times and schema in it) or
// the bytes of the database file it wrote, and imports the file into a fresh footprint store.
// Whatever the file, the import ends in runs or in kDatabase with one printable line, and
// leaves the file as it was.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "footprint/store.h"
#include "fuzz_util.h"
#include "store/umlaut_import.h"
#include "test_util.h"
#include "util/json_bounded.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace footprint {
namespace {

// UMLAUT's own pieces, beside fuzz::CommonTokens(): its types, its times, JSON as it encodes
// it once and twice, and nesting past footprint's limit.
const std::vector<std::string>& UmlautTokens() {
  static const std::vector<std::string> tokens = {"'memory'",
                                                  "'gpu'",
                                                  "'time'",
                                                  "'tta'",
                                                  "'loss'",
                                                  "'confusion-matrix'",
                                                  "'hyperparameters'",
                                                  "'timed tta'",
                                                  "'2024-08-13 09:18:33.358660'",
                                                  "\\\"",
                                                  "\\\\n",
                                                  "\"timestamps\": ",
                                                  "\"measurements\": ",
                                                  "\"labels\": ",
                                                  "\"df\": ",
                                                  "\"target\": ",
                                                  "[[1, 2], [3, 4]]",
                                                  "null",
                                                  "true",
                                                  "{}",
                                                  "[]",
                                                  std::string(300, '['),
                                                  " GENERATED ALWAYS AS (upper(uuid)) VIRTUAL"};
  return tokens;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Writes the database of `sql` at `path`, statement by statement: a statement the mutation
// broke is left out, the others are kept.
void WriteUmlautDatabase(const std::string& sql, const std::string& path) {
  std::filesystem::remove(path);
  sqlite3* raw = nullptr;
  ASSERT_EQ(
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
      SQLITE_OK);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close_v2)> db(raw, sqlite3_close_v2);
  sqlite3_limit(raw, SQLITE_LIMIT_LENGTH, 1 << 20);  // a mutated seed stays a small file
  sqlite3_exec(raw, "PRAGMA synchronous = OFF", nullptr, nullptr, nullptr);
  for (std::string_view line : Split(sql, '\n')) {
    sqlite3_exec(raw, std::string(line).c_str(), nullptr, nullptr, nullptr);
  }
}

TEST(Fuzz, UmlautImport) {
  const std::vector<std::string> seeds = fuzz::Corpus("umlaut");
  if (seeds.empty()) return;
  testing::TempDir dir;
  const std::string umlaut = dir.File("umlaut.db");
  std::mt19937 rng(4242);
  const int n = fuzz::Iterations(400);
  int imported = 0;
  for (int i = 0; i < n; ++i) {
    const std::string& seed = seeds[static_cast<size_t>(i) % seeds.size()];
    const bool mutate_file = i % 4 == 3;  // most mutations in the documents the importer reads
    WriteUmlautDatabase(mutate_file ? seed : fuzz::Mutate(seed, rng, UmlautTokens()), umlaut);
    if (::testing::Test::HasFatalFailure()) return;
    if (mutate_file) {
      const std::string bytes = fuzz::Mutate(ReadFile(umlaut), rng);
      std::ofstream(umlaut, std::ios::binary | std::ios::trunc) << bytes;
    }
    const std::string before = ReadFile(umlaut);
    const std::string store_path = dir.File("fp-" + std::to_string(i) + ".db");
    auto store = OpenStore(store_path);
    ASSERT_TRUE(store.ok()) << store.status().message();
    auto runs = ImportUmlautDatabase(umlaut, **store);
    if (runs.ok()) {
      ++imported;
    } else {
      EXPECT_EQ(runs.status().code(), StatusCode::kDatabase) << runs.status().message();
      fuzz::ExpectOneInertLine(runs.status(), before);
    }
    EXPECT_EQ(ReadFile(umlaut), before) << "import wrote to the file it read";
    store->reset();
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(store_path + suffix);
    if (::testing::Test::HasFatalFailure()) return;
  }
  // The mutations stay close enough to the seeds that many files still import: the fuzzing
  // reaches past the first check, into the documents.
  EXPECT_GT(imported, n / 4) << "of " << n;
}

// The deepest nesting of arrays and objects in `text` as nlohmann's parser counts it (it does
// not recurse); nullopt when `text` is not JSON.
std::optional<int> Nesting(const std::string& text) {
  using Json = nlohmann::json;  // not `json`: a unity build has file-level ones
  int deepest = 0;
  const Json j = Json::parse(
      text,
      [&](int depth, Json::parse_event_t event, Json&) {
        if (event == Json::parse_event_t::object_start ||
            event == Json::parse_event_t::array_start) {
          deepest = std::max(deepest, depth + 1);
        }
        return true;
      },
      /*allow_exceptions=*/false);
  return j.is_discarded() ? std::nullopt : std::optional(deepest);
}

// The documents of UMLAUT's rows, around the nesting limit: the bounded parser refuses
// exactly the JSON that nests deeper than kMaxJsonDepth (brackets inside strings, escaped
// quotes and all), and what it accepts can be written out again.
TEST(Fuzz, UmlautJsonNesting) {
  const std::string at_limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  const std::vector<std::string> seeds = {
      R"({"timestamps": ["2024-08-13 09:18:33.358660"], "measurements": [400.0, 401.5]})",
      R"({"matrix": "[[5 1]
 [2 7]]", "labels": ["cat", "dog"]["]})",
      R"("{"hyperparameters": ["lr"], "df": {"lr": [[0.1]]}, "target": "lr"}")",
      at_limit,
      "[" + at_limit + "]",
      R"([{"a": [{"b": "\"}]}])"};
  const std::vector<std::string> tokens = {"[",  "]",    "{\"a\": ",           "}",
                                           "\\", "\\\"", std::string(300, '[')};
  std::mt19937 rng(2718);
  const int n = fuzz::Iterations(20000);
  for (int i = 0; i < n; ++i) {
    const std::string text =
        fuzz::Mutate(seeds[static_cast<size_t>(i) % seeds.size()], rng, tokens);
    const Result<nlohmann::json> parsed = ParseBoundedJson(text);
    const std::optional<int> nesting = Nesting(text);
    if (!parsed.ok()) {
      fuzz::ExpectOneInertLine(parsed.status(), text);
      EXPECT_TRUE(!nesting || *nesting > kMaxJsonDepth) << Inert(text);
    } else if (nesting) {
      EXPECT_LE(*nesting, kMaxJsonDepth) << Inert(text);
      EXPECT_FALSE(JsonText(*parsed).empty()) << Inert(text);  // written out, not overflowed
    } else {
      EXPECT_TRUE(parsed->is_discarded()) << Inert(text);
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace footprint
