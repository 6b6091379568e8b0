// fp_matmul N REPEAT: multiplies two N x N matrices REPEAT times (naive triple loop, doubles)
// and prints a checksum so the work cannot be optimized away.
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fp_matmul N REPEAT\n");
    return 2;
  }
  const size_t n = static_cast<size_t>(std::atol(argv[1]));
  const int repeat = std::atoi(argv[2]);
  std::vector<double> a(n * n), b(n * n), c(n * n);
  for (size_t i = 0; i < n * n; ++i) {
    a[i] = static_cast<double>(i % 17) / 17.0;
    b[i] = static_cast<double>(i % 13) / 13.0;
  }
  for (int r = 0; r < repeat; ++r) {
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < n; ++k) {
        double aik = a[i * n + k];
        for (size_t j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
      }
    }
  }
  double sum = 0;
  for (double v : c) sum += v;
  std::printf("checksum %.3f\n", sum);
  return 0;
}
