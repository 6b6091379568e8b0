// fp_store_ingest: many runs writing samples into one database at once, through Store::Append
// exactly as footprint's writer does (one transaction per flush), then every sample counted
// back. Used by bench/cluster_bench.py for the PostgreSQL store, with SQLite as the baseline.
//
//   fp_store_ingest LOCATION RUNS SERIES SAMPLES_PER_SERIES BATCH_PER_SERIES
//
// Starts RUNS threads, each with its own store and run of SERIES series, appending
// BATCH_PER_SERIES samples of every series per call until each series holds
// SAMPLES_PER_SERIES. Prints one JSON line: samples, seconds, samples_per_s, lost (samples not
// found when read back: must be 0), run_ids.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "footprint/store.h"

namespace footprint {
namespace {

struct Config {
  std::string location;
  int runs, series;
  int64_t samples_per_series, batch;
};

std::string RunId(int i) {
  char id[40];
  std::snprintf(id, sizeof id, "00000000-0000-4000-8000-%012d", i + 1);
  return id;
}

// One run's writes; an error message, or empty.
std::string WriteRun(const Config& c, int index) {
  auto store = OpenStore(c.location);
  if (!store.ok()) return store.status().message();
  RunRecord run;
  run.id = RunId(index);
  run.name = "ingest-" + std::to_string(index);
  run.command = {"synthetic"};
  run.started_at_ns = 1;
  if (Status st = (*store)->CreateRun(run); !st.ok()) return st.message();
  std::vector<int64_t> ids;
  for (int s = 0; s < c.series; ++s) {
    auto id = (*store)->EnsureSeries({0, run.id, "m" + std::to_string(s), "u", "tree", {}});
    if (!id.ok()) return id.status().message();
    ids.push_back(*id);
  }
  std::vector<SamplePoint> batch;
  for (int64_t t = 0; t < c.samples_per_series; t += c.batch) {
    batch.clear();
    for (int64_t k = t; k < std::min(t + c.batch, c.samples_per_series); ++k) {
      for (int64_t id : ids)
        batch.push_back({id, (k + 1) * 1'000'000, static_cast<double>(k % 977)});
    }
    if (Status st = (*store)->Append(run.id, batch, t); !st.ok()) return st.message();
  }
  run.status = RunStatus::kOk;
  run.ended_at_ns = c.samples_per_series * 1'000'000;
  Status st = (*store)->FinishRun(run, {{"duration_s", c.samples_per_series / 1000.0}});
  return st.ok() ? "" : st.message();
}

int Main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr,
                 "usage: fp_store_ingest LOCATION RUNS SERIES SAMPLES_PER_SERIES "
                 "BATCH_PER_SERIES\n");
    return 2;
  }
  const Config c{argv[1], std::atoi(argv[2]), std::atoi(argv[3]), std::atoll(argv[4]),
                 std::atoll(argv[5])};
  if (auto first = OpenStore(c.location); !first.ok()) {  // creates the schema once
    std::fprintf(stderr, "fp_store_ingest: %s\n", first.status().message().c_str());
    return 1;
  }
  std::vector<std::string> errors(static_cast<size_t>(c.runs));
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < c.runs; ++i) {
    threads.emplace_back([&, i] { errors[static_cast<size_t>(i)] = WriteRun(c, i); });
  }
  for (auto& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const std::string& e : errors) {
    if (!e.empty()) {
      std::fprintf(stderr, "fp_store_ingest: %s\n", e.c_str());
      return 1;
    }
  }
  // Read everything back: each series must hold exactly its samples.
  auto store = OpenStore(c.location, {.read_only = true});
  if (!store.ok()) return 1;
  int64_t found = 0;
  std::string ids;
  for (int i = 0; i < c.runs; ++i) {
    auto series = (*store)->ListSeries(RunId(i));
    if (!series.ok()) return 1;
    for (const SeriesRecord& s : *series) {
      auto values = (*store)->LoadValues(s.id);
      if (!values.ok()) return 1;
      found += static_cast<int64_t>(values->size());
    }
    ids += (i ? ",\"" : "\"") + RunId(i) + "\"";
  }
  const int64_t written = int64_t{c.runs} * c.series * c.samples_per_series;
  std::printf(
      "{\"samples\": %lld, \"seconds\": %.3f, \"samples_per_s\": %.0f, \"lost\": %lld, "
      "\"run_ids\": [%s]}\n",
      static_cast<long long>(written), seconds, written / seconds,
      static_cast<long long>(written - found), ids.c_str());
  return 0;
}

}  // namespace
}  // namespace footprint

int main(int argc, char** argv) { return footprint::Main(argc, argv); }
