// Cost of the instrumentation API's hot path: entering and leaving a scope, and logging a
// value, on a benchmark that records into a temporary database (its writer thread runs as in
// real use). Target (DESIGN.md): scope enter + exit < 50 ns.
//
// Every 2,048 iterations the timer pauses while Flush() empties the per-thread ring, so that
// what is measured is the real path (the event stored), never the cheaper overflow path.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "footprint/api.h"

namespace {

// One benchmark for the whole binary, in a fresh folder, closed and removed at exit (its
// database holds every scope measured: gigabytes).
footprint::Benchmark& Shared() {
  struct Holder {
    std::string dir;
    std::unique_ptr<footprint::Benchmark> bm;
    Holder() {
      std::string tmpl = (std::filesystem::temp_directory_path() / "fp-scope-XXXXXX").string();
      if (mkdtemp(tmpl.data()) == nullptr) abort();
      dir = tmpl;
      footprint::BenchmarkOptions o;
      o.db = dir + "/bench.db";
      o.name = "scope-bench";
      o.join = false;
      auto opened = footprint::Benchmark::Open(o);
      if (!opened.ok()) abort();
      bm = std::move(opened).value();
    }
    ~Holder() {
      (void)bm->Close();
      bm.reset();
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  };
  static Holder holder;
  return *holder.bm;
}

// Pauses the timer to let the writer drain the rings every `every` iterations.
void DrainEvery(benchmark::State& state, int64_t& n, int64_t every) {
  if (++n % every != 0) return;
  state.PauseTiming();
  if (!Shared().Flush().ok()) state.SkipWithError("flush failed");
  state.ResumeTiming();
}

void BM_ScopeEnterExit(benchmark::State& state) {
  footprint::Benchmark& bm = Shared();
  static const footprint::ScopeName kName("hot scope");
  int64_t n = 0;
  for (auto _ : state) {
    {
      footprint::Scope scope(bm, kName);
      benchmark::ClobberMemory();
    }
    DrainEvery(state, n, 2048);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ScopeEnterExit);

void BM_MacroScope(benchmark::State& state) {
  Shared();
  int64_t n = 0;
  for (auto _ : state) {
    {
      FOOTPRINT_SCOPE("macro scope");
      benchmark::ClobberMemory();
    }
    DrainEvery(state, n, 2048);
  }
}
BENCHMARK(BM_MacroScope);

void BM_NestedScopes(benchmark::State& state) {
  footprint::Benchmark& bm = Shared();
  static const footprint::ScopeName kOuter("outer"), kInner("inner");
  int64_t n = 0;
  for (auto _ : state) {
    {
      footprint::Scope outer(bm, kOuter);
      footprint::Scope inner(bm, kInner);
      benchmark::ClobberMemory();
    }
    DrainEvery(state, n, 1024);
  }
}
BENCHMARK(BM_NestedScopes);

void BM_LogValue(benchmark::State& state) {
  footprint::Benchmark& bm = Shared();
  int64_t step = 0;
  for (auto _ : state) {
    bm.Log("loss", 0.5, step);
    DrainEvery(state, step, 4096);
  }
}
BENCHMARK(BM_LogValue);

// A GPU scope: two cuEventRecord calls around the scope, the events taken from the pool, and
// the writer thread resolving them between drains (not timed). Needs FOOTPRINT_CUDA_LIBRARY:
// the fake driver of the tests (build/tests/fake_cuda/libcuda.so.1, which then measures
// footprint's own share), or libcuda.so.1 on a GPU machine (its primary context is made
// current here).
bool MakeCudaContextCurrent() {
  const char* path = std::getenv("FOOTPRINT_CUDA_LIBRARY");
  void* lib = path ? ::dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (lib == nullptr) return false;
  if (auto fake = reinterpret_cast<void (*)(int)>(::dlsym(lib, "fake_cuda_make_current"))) {
    fake(1);
    return true;
  }
  auto init = reinterpret_cast<int (*)(unsigned)>(::dlsym(lib, "cuInit"));
  auto retain = reinterpret_cast<int (*)(void**, int)>(::dlsym(lib, "cuDevicePrimaryCtxRetain"));
  auto set = reinterpret_cast<int (*)(void*)>(::dlsym(lib, "cuCtxSetCurrent"));
  void* ctx = nullptr;
  return init && retain && set && init(0) == 0 && retain(&ctx, 0) == 0 && set(ctx) == 0;
}

void BM_GpuScopeEnterExit(benchmark::State& state) {
  footprint::Benchmark& bm = Shared();
  if (!MakeCudaContextCurrent()) {
    state.SkipWithError(
        "set FOOTPRINT_CUDA_LIBRARY to a CUDA driver (build/tests/fake_cuda/"
        "libcuda.so.1 on a machine without a GPU)");
    return;
  }
  static const footprint::ScopeName kName("gpu scope");
  int64_t n = 0;
  for (auto _ : state) {
    { footprint::GpuScope scope(bm, kName); }
    DrainEvery(state, n, 1024);
  }
  if (!bm.GpuTiming().ok()) state.SkipWithError(bm.GpuTiming().message().c_str());
}
BENCHMARK(BM_GpuScopeEnterExit);

// A GPU scope where GPU time cannot be measured (no driver): the wall-time scope plus the
// check that says why (the reason is stored once).
void BM_GpuScopeWithoutCuda(benchmark::State& state) {
  footprint::Benchmark& bm = Shared();
  static const footprint::ScopeName kName("gpu scope without cuda");
  int64_t n = 0;
  for (auto _ : state) {
    { footprint::GpuScope scope(bm, kName); }
    DrainEvery(state, n, 2048);
  }
  if (bm.GpuTiming().ok())
    state.SkipWithError("GPU time was measured: unset FOOTPRINT_CUDA_LIBRARY");
}
BENCHMARK(BM_GpuScopeWithoutCuda);

}  // namespace

BENCHMARK_MAIN();
