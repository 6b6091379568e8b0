/* footprint.h: the C ABI over footprint's instrumentation API (footprint/api.h), for other
 * languages and for runtimes such as DAPHNE that speak C.
 *
 *   fp_benchmark* bm;
 *   if (fp_open("runs.db", "my-run", "what this measures", &bm) != FP_OK) {
 *     fprintf(stderr, "%s\n", fp_last_error());
 *   }
 *   uint64_t s = fp_scope_begin(bm, "load data");
 *   ...
 *   fp_scope_end(bm, s);
 *   fp_log(bm, "loss", 0.25, 3, 1);
 *   fp_close(bm);   // also frees bm
 *
 * Errors: functions return FP_OK (0) or a negative FP_E* code; fp_last_error() gives the
 * message of the calling thread's last failure (valid until that thread's next call).
 * No C++ exception ever crosses this boundary.
 *
 * Thread-safety: every function may be called from any thread on the same fp_benchmark,
 * except fp_close, which must be the last call on it. Scopes nest per thread. */
#ifndef FOOTPRINT_FOOTPRINT_H_
#define FOOTPRINT_FOOTPRINT_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fp_benchmark fp_benchmark;

enum {
  FP_OK = 0,
  FP_EINVAL = -1,      /* a bad argument (NULL, malformed JSON, mismatched sizes) */
  FP_ENOTFOUND = -2,   /* a named file or run does not exist */
  FP_EDB = -3,         /* the database cannot be opened or written */
  FP_EIO = -4,         /* a system call failed */
  FP_EINTERNAL = -5,   /* anything else */
  FP_EUNSUPPORTED = -6 /* not possible here (e.g. GPU time without a CUDA context) */
};

/* Opens a benchmark: a run of its own in database `db` (NULL: $FOOTPRINT_DB or
 * ./footprint.db), or the enclosing `footprint run` when there is one. `name` and
 * `description` may be NULL. On success *out owns the benchmark until fp_close. */
int fp_open(const char* db, const char* name, const char* description, fp_benchmark** out);

/* Flushes, ends the run (status "ok" if `failed` is 0, else "failed") and frees `bm`. */
int fp_close(fp_benchmark* bm, int failed);

/* The run's id (a UUID string owned by bm). */
const char* fp_run_id(const fp_benchmark* bm);

/* A scope on the calling thread: begin returns a handle for end. Never blocks on I/O. */
uint64_t fp_scope_begin(fp_benchmark* bm, const char* name);
void fp_scope_end(fp_benchmark* bm, uint64_t scope);

/* A scope whose GPU work is timed too, with CUDA events recorded on `stream` (a CUstream /
 * cudaStream_t; NULL: the legacy default stream of the calling thread's current CUDA context).
 * The GPU time is resolved later by footprint's writer thread and stored as the value
 * `gpu_time_s` of the scope. Without a CUDA driver or context the scope records its wall time
 * only, and fp_gpu_timing says why. No CUDA is needed to build or link against footprint. */
uint64_t fp_gpu_scope_begin(fp_benchmark* bm, const char* name, void* stream);
void fp_gpu_scope_end(fp_benchmark* bm, uint64_t scope);
/* FP_OK when the last GPU scope is timed (or none was begun); FP_EUNSUPPORTED otherwise, with
 * the reason in fp_last_error(). */
int fp_gpu_timing(fp_benchmark* bm);

/* A named scalar; `has_step` says whether `step` is meaningful. */
int fp_log(fp_benchmark* bm, const char* name, double value, int64_t step, int has_step);
/* Accuracy against a target; the first time it is reached, time_to_accuracy is logged too. */
int fp_log_accuracy(fp_benchmark* bm, double accuracy, double target, int64_t step, int has_step);
/* A JSON document (e.g. a confusion matrix), validated. */
int fp_log_json(fp_benchmark* bm, const char* name, const char* json, int64_t step, int has_step);
/* A file produced by the run: stores its path, sha256 and size. */
int fp_artifact(fp_benchmark* bm, const char* name, const char* path);

/* The calling thread's last error message ("" when none). */
const char* fp_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* FOOTPRINT_FOOTPRINT_H_ */
