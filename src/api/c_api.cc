// The C ABI: thin wrappers that turn Status into return codes and catch everything.
#include <exception>
#include <mutex>
#include <string>
#include <unordered_map>

#include "footprint/api.h"
#include "footprint/footprint.h"

struct fp_benchmark {
  std::unique_ptr<footprint::Benchmark> bm;
  // Interned names by string, so that fp_scope_begin interns each name once.
  std::mutex names_mu;
  std::unordered_map<std::string, footprint::ScopeName> names;
};

namespace {

thread_local std::string g_last_error;

int Fail(const footprint::Status& st) {
  g_last_error = st.message();
  switch (st.code()) {
    case footprint::StatusCode::kInvalidArgument:
      return FP_EINVAL;
    case footprint::StatusCode::kNotFound:
      return FP_ENOTFOUND;
    case footprint::StatusCode::kDatabase:
      return FP_EDB;
    case footprint::StatusCode::kIo:
      return FP_EIO;
    case footprint::StatusCode::kUnsupported:
      return FP_EUNSUPPORTED;
    default:
      return FP_EINTERNAL;
  }
}

int Check(const footprint::Status& st) {
  if (st.ok()) return FP_OK;
  return Fail(st);
}

// Runs f, converting any exception (allocation failure, ...) into FP_EINTERNAL.
template <typename F>
int Guard(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    g_last_error = e.what();
  } catch (...) {
    g_last_error = "unknown error";
  }
  return FP_EINTERNAL;
}

std::optional<int64_t> Step(int64_t step, int has_step) {
  return has_step ? std::optional<int64_t>(step) : std::nullopt;
}

// The interned name (each name once per benchmark).
const footprint::ScopeName& Intern(fp_benchmark& bm, const char* name) {
  std::lock_guard<std::mutex> lock(bm.names_mu);
  return bm.names.try_emplace(name, name).first->second;
}

// Begins a scope with `begin`; 0 (and the error) if that throws, as on allocation failure.
template <typename F>
uint64_t BeginOrZero(F&& begin) {
  try {
    return begin();
  } catch (...) {
    g_last_error = "out of memory";
    return 0;
  }
}

int NullArgument(const char* what) {
  g_last_error = std::string(what) + " must not be NULL";
  return FP_EINVAL;
}

}  // namespace

extern "C" {

int fp_open(const char* db, const char* name, const char* description, fp_benchmark** out) {
  if (out == nullptr) return NullArgument("out");
  return Guard([&]() -> int {
    footprint::BenchmarkOptions o;
    if (db) o.db = db;
    if (name) o.name = name;
    if (description) o.description = description;
    auto bm = footprint::Benchmark::Open(o);
    if (!bm.ok()) return Fail(bm.status());
    *out = new fp_benchmark{std::move(bm).value(), {}, {}};
    return FP_OK;
  });
}

int fp_close(fp_benchmark* bm, int failed) {
  if (bm == nullptr) return NullArgument("bm");
  int rc = Guard([&]() -> int {
    return Check(bm->bm->Close(failed ? footprint::RunStatus::kFailed : footprint::RunStatus::kOk));
  });
  delete bm;
  return rc;
}

const char* fp_run_id(const fp_benchmark* bm) { return bm ? bm->bm->run_id().c_str() : ""; }

uint64_t fp_scope_begin(fp_benchmark* bm, const char* name) {
  if (bm == nullptr || name == nullptr) return 0;
  return BeginOrZero([&] { return bm->bm->BeginScope(Intern(*bm, name)); });
}

void fp_scope_end(fp_benchmark* bm, uint64_t scope) {
  if (bm != nullptr && scope != 0) bm->bm->EndScope(scope);
}

uint64_t fp_gpu_scope_begin(fp_benchmark* bm, const char* name, void* stream) {
  if (bm == nullptr || name == nullptr) return 0;
  return BeginOrZero([&] { return bm->bm->BeginGpuScope(Intern(*bm, name), stream); });
}

void fp_gpu_scope_end(fp_benchmark* bm, uint64_t scope) {
  if (bm != nullptr && scope != 0) bm->bm->EndGpuScope(scope);
}

int fp_gpu_timing(fp_benchmark* bm) {
  if (bm == nullptr) return NullArgument("bm");
  return Guard([&]() -> int { return Check(bm->bm->GpuTiming()); });
}

int fp_log(fp_benchmark* bm, const char* name, double value, int64_t step, int has_step) {
  if (bm == nullptr) return NullArgument("bm");
  if (name == nullptr) return NullArgument("name");
  return Guard([&]() -> int {
    bm->bm->Log(name, value, Step(step, has_step));
    return FP_OK;
  });
}

int fp_log_accuracy(fp_benchmark* bm, double accuracy, double target, int64_t step, int has_step) {
  if (bm == nullptr) return NullArgument("bm");
  return Guard([&]() -> int {
    bm->bm->LogAccuracy(accuracy, target, Step(step, has_step));
    return FP_OK;
  });
}

int fp_log_json(fp_benchmark* bm, const char* name, const char* json, int64_t step, int has_step) {
  if (bm == nullptr) return NullArgument("bm");
  if (name == nullptr || json == nullptr) return NullArgument("name and json");
  return Guard([&]() -> int { return Check(bm->bm->LogJson(name, json, Step(step, has_step))); });
}

int fp_artifact(fp_benchmark* bm, const char* name, const char* path) {
  if (bm == nullptr) return NullArgument("bm");
  if (name == nullptr || path == nullptr) return NullArgument("name and path");
  return Guard([&]() -> int { return Check(bm->bm->Artifact(name, path)); });
}

const char* fp_last_error(void) { return g_last_error.c_str(); }

}  // extern "C"
