// fp_store_semantics LOCATION: writes the cases where stores must agree through the Store
// interface and prints what reading gives back, one line per case, so that
// tests/cluster/test_postgres.py can hold PostgreSQL to SQLite's answers: a time written twice
// in one batch, chunks that overlap (the later write wins), a page of a series after a time,
// the end of a series.
#include <cstdio>
#include <string>
#include <vector>

#include "footprint/store.h"

namespace footprint {
namespace {

int Fail(const Status& st) {
  std::fprintf(stderr, "fp_store_semantics: %s\n", st.message().c_str());
  return 1;
}

std::string Samples(Store& store, int64_t series, int64_t after, size_t limit) {
  std::string out;
  Status st = store.ScanSamplesAfter(series, after, limit, [&](int64_t t, double v) {
    out += (out.empty() ? "" : " ") + std::to_string(t) + ":" + std::to_string(v).substr(0, 4);
  });
  return st.ok() ? out : st.message();
}

int Main(const std::string& location) {
  auto store = OpenStore(location);
  if (!store.ok()) return Fail(store.status());
  Store& s = **store;
  RunRecord run{.id = "00000000-0000-4000-8000-00000000abcd", .name = "semantics"};
  run.command = {"synthetic"};
  if (Status st = s.CreateRun(run); !st.ok()) return Fail(st);
  auto id = s.EnsureSeries({0, run.id, "cpu", "%", "tree", {}});
  if (!id.ok()) return Fail(id.status());
  const std::vector<std::vector<SamplePoint>> writes = {
      {{*id, 10, 1}, {*id, 20, 2}},
      {{*id, 0, 9}, {*id, 20, 3}},   // overlaps the first: 20 is now 3
      {{*id, 30, 4}, {*id, 30, 5}},  // the same time twice in one write: 5
  };
  for (const auto& w : writes) {
    if (Status st = s.Append(run.id, w, 1); !st.ok()) return Fail(st);
  }
  std::printf("all: %s\n", Samples(s, *id, -1, 0).c_str());
  std::printf("after 5, 2 of them: %s\n", Samples(s, *id, 5, 2).c_str());
  auto end = s.SeriesEnd(*id);
  if (!end.ok()) return Fail(end.status());
  std::printf("end: %lld\n", static_cast<long long>(end->value_or(-1)));
  return 0;
}

}  // namespace
}  // namespace footprint

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fp_store_semantics LOCATION\n");
    return 2;
  }
  return footprint::Main(argv[1]);
}
