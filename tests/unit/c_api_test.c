/* The C ABI used from C (compiled as C11): a benchmark with nested scopes, values and an
 * artifact, errors as codes with messages, then the database read back with SQLite. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "footprint/footprint.h"

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++checks;                                                                  \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

static long long Count(sqlite3* db, const char* sql) {
  sqlite3_stmt* st = NULL;
  long long n = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    n = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  return n;
}

int main(void) {
  char dir[] = "/tmp/fp-c-api-XXXXXX";
  if (mkdtemp(dir) == NULL) return 2;
  char db_path[256], artifact[256];
  snprintf(db_path, sizeof db_path, "%s/fp.db", dir);
  snprintf(artifact, sizeof artifact, "%s/out.txt", dir);
  FILE* f = fopen(artifact, "w");
  fputs("abc", f);
  fclose(f);

  unsetenv("FOOTPRINT_RUN_ID");
  fp_benchmark* bm = NULL;
  CHECK(fp_open(db_path, "c-run", "from C", &bm) == FP_OK);
  if (bm == NULL) return 1;
  CHECK(strlen(fp_run_id(bm)) == 36);

  for (int epoch = 0; epoch < 3; ++epoch) {
    uint64_t outer = fp_scope_begin(bm, "epoch");
    uint64_t inner = fp_scope_begin(bm, "step");
    CHECK(fp_log(bm, "loss", 1.0 / (epoch + 1), epoch, 1) == FP_OK);
    fp_scope_end(bm, inner);
    fp_scope_end(bm, outer);
    CHECK(fp_log_accuracy(bm, 0.3 * epoch, 0.5, epoch, 1) == FP_OK);
  }
  CHECK(fp_log_json(bm, "config", "{\"layers\": 2}", 0, 0) == FP_OK);
  CHECK(fp_log_json(bm, "broken", "{layers", 0, 0) == FP_EINVAL);
  CHECK(strstr(fp_last_error(), "not valid JSON") != NULL);
  CHECK(fp_artifact(bm, "output", artifact) == FP_OK);
  CHECK(fp_artifact(bm, "missing", "/no/such/file") == FP_ENOTFOUND);
  CHECK(fp_log(NULL, "x", 1, 0, 0) == FP_EINVAL);
  /* GPU time without a CUDA driver: the scope keeps its wall time, the reason is stored once. */
  setenv("FOOTPRINT_CUDA_LIBRARY", "/no/such/libcuda.so.1", 1);
  CHECK(fp_gpu_timing(bm) == FP_OK); /* nothing asked yet */
  for (int i = 0; i < 2; ++i) fp_gpu_scope_end(bm, fp_gpu_scope_begin(bm, "kernel", NULL));
  CHECK(fp_gpu_timing(bm) == FP_EUNSUPPORTED);
  CHECK(strstr(fp_last_error(), "cannot load the CUDA driver") != NULL);
  CHECK(fp_close(bm, 0) == FP_OK);

  fp_benchmark* bad = NULL;
  CHECK(fp_open("/no/such/dir/fp.db", NULL, NULL, &bad) == FP_EDB);
  CHECK(bad == NULL);
  CHECK(strstr(fp_last_error(), "/no/such/dir/fp.db") != NULL);

  sqlite3* db = NULL;
  CHECK(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
  CHECK(Count(db, "SELECT count(*) FROM runs WHERE name = 'c-run' AND status = 'ok'") == 1);
  CHECK(Count(db, "SELECT count(*) FROM scopes WHERE name = 'epoch' AND parent_id IS NULL") == 3);
  CHECK(Count(db,
              "SELECT count(*) FROM scopes s JOIN scopes p ON s.parent_id = p.id "
              "WHERE s.name = 'step' AND p.name = 'epoch' AND s.end_ns IS NOT NULL") == 3);
  CHECK(Count(db, "SELECT count(*) FROM run_values WHERE name = 'loss' AND scope_id IS NOT NULL") ==
        3);
  CHECK(Count(db, "SELECT count(*) FROM run_values WHERE name = 'time_to_accuracy' AND step = 2") ==
        1);
  CHECK(Count(db, "SELECT count(*) FROM run_values WHERE name = 'config'") == 1);
  CHECK(Count(db, "SELECT count(*) FROM scopes WHERE name = 'kernel' AND end_ns IS NOT NULL") == 2);
  CHECK(Count(db,
              "SELECT count(*) FROM run_values v JOIN scopes s ON v.scope_id = s.id WHERE "
              "v.name = 'gpu_time_s' AND v.value IS NULL AND s.name = 'kernel' AND "
              "json_extract(v.data, '$.unavailable') LIKE '%libcuda%'") == 1);
  CHECK(Count(db,
              "SELECT count(*) FROM artifacts WHERE name = 'output' AND size = 3 AND sha256 = "
              "'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'") == 1);
  sqlite3_close(db);

  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures == 0 ? 0 : 1;
}
