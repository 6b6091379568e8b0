// The workload of test_containers.py, linked statically into a locally made image (no
// registry): each mode does a known amount of work and prints what its own kernel accounts say.
//   burn SECONDS           spins until its CPU time reaches SECONDS; prints it (getrusage)
//   hold ANON_MIB SHM_MIB SECONDS  touches ANON_MIB of anonymous memory and writes SHM_MIB into
//                          a /dev/shm file, then holds both for SECONDS
//   gated FILE SECONDS     waits (sleeping) until FILE exists, then spins SECONDS of CPU; prints
//                          its CPU time in all and since FILE appeared, then idles 0.5 s
//   write BYTES            writes BYTES to /data/out with O_DIRECT (block I/O the cgroup is
//                          charged for, page cache bypassed) and prints the count written
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double CpuSeconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int Burn(double seconds) {
  volatile unsigned long x = 0;
  while (CpuSeconds() < seconds) {
    for (int i = 0; i < 1000000; ++i) x += i;
  }
  printf("cpu_s %.6f\n", CpuSeconds());
  return 0;
}

static int Gated(const char* file, double seconds) {
  const struct timespec nap = {0, 10000000};
  while (access(file, F_OK) != 0) nanosleep(&nap, NULL);
  const double at_gate = CpuSeconds();
  volatile unsigned long x = 0;
  while (CpuSeconds() - at_gate < seconds) {
    for (int i = 0; i < 1000000; ++i) x += i;
  }
  printf("cpu_s %.6f gated_s %.6f\n", CpuSeconds(), CpuSeconds() - at_gate);
  fflush(stdout);
  nanosleep(&(struct timespec){0, 500000000}, NULL);  // its end is sampled before it exits
  return 0;
}

static int Hold(long anon_mib, long shm_mib, int seconds) {
  const size_t anon = (size_t)anon_mib << 20, shm = (size_t)shm_mib << 20;
  char* p = mmap(NULL, anon, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 1;
  memset(p, 1, anon);
  int fd = open("/dev/shm/held", O_CREAT | O_WRONLY | O_TRUNC, 0600);
  if (fd < 0) return 2;
  char block[1 << 16];
  memset(block, 2, sizeof block);
  for (size_t done = 0; done < shm; done += sizeof block) {
    if (write(fd, block, sizeof block) != (ssize_t)sizeof block) return 3;
  }
  close(fd);
  printf("held anon %zu shm %zu\n", anon, shm);
  fflush(stdout);
  sleep(seconds);
  return p[anon - 1] == 1 ? 0 : 4;
}

static int Write(long bytes) {
  const size_t block = 1 << 20;
  void* buf;
  if (posix_memalign(&buf, 4096, block) != 0) return 1;
  memset(buf, 3, block);
  int fd = open("/data/out", O_CREAT | O_WRONLY | O_TRUNC | O_DIRECT, 0600);
  if (fd < 0) return 2;
  long written = 0;
  while (written < bytes) {
    ssize_t n = write(fd, buf, block);
    if (n <= 0) return 3;
    written += n;
  }
  close(fd);
  printf("written %ld\n", written);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "burn") == 0) return Burn(atof(argv[2]));
  if (argc == 5 && strcmp(argv[1], "hold") == 0) {
    return Hold(atol(argv[2]), atol(argv[3]), atoi(argv[4]));
  }
  if (argc == 4 && strcmp(argv[1], "gated") == 0) return Gated(argv[2], atof(argv[3]));
  if (argc == 3 && strcmp(argv[1], "write") == 0) return Write(atol(argv[2]));
  fprintf(stderr, "usage: work burn S | gated FILE S | hold ANON_MIB SHM_MIB S | write BYTES\n");
  return 64;
}
