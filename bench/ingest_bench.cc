// SQLite ingest rate through Store::Append (Google Benchmark).
//
// BM_Ingest/B appends batches of B samples (spread over 10 series, times increasing as the
// writer thread's would) to a file database, one transaction per batch, exactly as footprint's
// writer does. `items_per_second` is the ingest rate in samples/s (wall-clock time: commits
// include the WAL write). The database is created in $FP_BENCH_DIR, else the current folder
// (so it lives on the same file system as a user's footprint.db, not a tmpfs), and removed at
// the end.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "footprint/store.h"

namespace footprint {
namespace {

constexpr int kSeries = 10;

std::string BenchDir() {
  const char* dir = std::getenv("FP_BENCH_DIR");
  return dir != nullptr && *dir != '\0' ? dir : ".";
}

void RemoveDb(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::remove((path + suffix).c_str());
  }
}

void BM_Ingest(benchmark::State& state) {
  const size_t batch_size = static_cast<size_t>(state.range(0));
  const std::string path = BenchDir() + "/fp-ingest-bench-" + std::to_string(::getpid()) + ".db";
  RemoveDb(path);
  {
    auto store = OpenStore(path);
    if (!store.ok()) {
      state.SkipWithError(store.status().message().c_str());
      return;
    }
    RunRecord run;
    run.id = "00000000-0000-4000-8000-000000000001";
    run.name = "ingest-bench";
    run.command = {"bench"};
    if (Status st = (*store)->CreateRun(run); !st.ok()) {
      state.SkipWithError(st.message().c_str());
      return;
    }
    std::vector<int64_t> series;
    for (int i = 0; i < kSeries; ++i) {
      auto id = (*store)->EnsureSeries(
          {0, run.id, "metric" + std::to_string(i), "unit", "tree", std::nullopt});
      if (!id.ok()) {
        state.SkipWithError(id.status().message().c_str());
        return;
      }
      series.push_back(*id);
    }
    std::vector<SamplePoint> batch(batch_size);
    int64_t tick = 0;  // one tick = one sampling pass = kSeries samples, 1 ms apart
    for (auto _ : state) {
      state.PauseTiming();
      for (size_t i = 0; i < batch_size; ++i) {
        int64_t pass = tick + static_cast<int64_t>(i / kSeries);
        batch[i] = {series[i % kSeries], pass * 1'000'000, static_cast<double>(pass % 1000) * 0.25};
      }
      tick += static_cast<int64_t>((batch_size + kSeries - 1) / kSeries);
      state.ResumeTiming();
      Status st = (*store)->Append(run.id, batch, tick);
      if (!st.ok()) {
        state.SkipWithError(st.message().c_str());
        break;
      }
    }
    state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(batch_size));
  }
  RemoveDb(path);
}

BENCHMARK(BM_Ingest)->Arg(2500)->Arg(25000)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace footprint

BENCHMARK_MAIN();
