/* The same kind of instrumentation from C, through footprint.h. */
#include <footprint/footprint.h>
#include <stdio.h>

int main(void) {
  fp_benchmark* bm;
  if (fp_open(NULL, "c-pipeline", "C ABI example", &bm) != FP_OK) {
    fprintf(stderr, "footprint: %s\n", fp_last_error());
    return 1;
  }
  double sum = 0;
  for (int epoch = 0; epoch < 3; ++epoch) {
    uint64_t scope = fp_scope_begin(bm, "epoch");
    for (long i = 1; i < 20000000; ++i) sum += 1.0 / (double)i;
    fp_scope_end(bm, scope);
    fp_log(bm, "sum", sum, epoch, 1);
  }
  printf("sum %.6f, run %s\n", sum, fp_run_id(bm));
  return fp_close(bm, 0) == FP_OK ? 0 : 1;
}
