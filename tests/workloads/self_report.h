// Ground truth from a workload itself: when FP_WORKLOAD_REPORT names a folder, the workload
// writes its own kernel accounts there at exit (file named after its PID): its arguments, its
// CPU time (getrusage RUSAGE_SELF, user + system), the part of it spent since `cpu_at_start`,
// its high-water mark (ru_maxrss) and how long it has been alive (see SelfAliveSeconds). Tests
// compare footprint's figures for the run against what the processes measured of themselves.
#ifndef FOOTPRINT_TESTS_WORKLOADS_SELF_REPORT_H_
#define FOOTPRINT_TESTS_WORKLOADS_SELF_REPORT_H_

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

// This process's CPU time so far, as the kernel accounts it (user + system).
inline double SelfCpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

inline double BootSeconds() {
  timespec now;
  clock_gettime(CLOCK_BOOTTIME, &now);
  return now.tv_sec + now.tv_nsec / 1e9;
}

// When this program's image began (static initialisation, right after exec and the dynamic
// loader), and in which process: a child forked without exec inherits both.
inline const double kImageStartBoot = BootSeconds();
inline const pid_t kImagePid = getpid();

// Seconds this process has been alive as the measured program: since its exec, or, in a child
// forked without exec, since its fork (the kernel's start time, in clock ticks since boot).
// Not since its fork in the first case: footprint forks the command, moves it into the run's
// cgroups and only then opens the gate to exec, and that wait (milliseconds, tens on a busy
// machine) is not part of the run.
inline double SelfAliveSeconds() {
  if (getpid() == kImagePid) return BootSeconds() - kImageStartBoot;
  FILE* f = std::fopen("/proc/self/stat", "r");
  if (f == nullptr) return -1;
  char buf[1024] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const char* p = std::strrchr(buf, ')');  // the command name may hold spaces
  if (n == 0 || p == nullptr) return -1;
  unsigned long long start_ticks = 0;
  // Fields after the name: state is field 3, starttime field 22.
  if (std::sscanf(p + 2,
                  "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                  "%*d %*d %llu",
                  &start_ticks) != 1) {
    return -1;
  }
  return BootSeconds() -
         static_cast<double>(start_ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// `cpu_at_start` is SelfCpuSeconds() when main began (0 in a forked child, whose account
// starts at its fork): "cpu_since_start_s" is then CPU time spent after exec, which counters
// enabled on exec see whole, while "cpu_s" also holds what the process did before exec.
inline void ReportSelf(int argc, char** argv, double cpu_at_start = 0) {
  const char* dir = std::getenv("FP_WORKLOAD_REPORT");
  if (dir == nullptr || *dir == '\0') return;
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = SelfCpuSeconds();
  std::string path = std::string(dir) + "/" + std::to_string(getpid());
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return;
  std::string args;
  for (int i = 1; i < argc; ++i) {
    if (i > 1) args += ' ';
    args += argv[i];
  }
  std::fprintf(f,
               "{\"args\": \"%s\", \"cpu_s\": %.6f, \"cpu_since_start_s\": %.6f, "
               "\"maxrss_bytes\": %ld, \"alive_s\": %.4f}\n",
               args.c_str(), cpu, cpu - cpu_at_start, ru.ru_maxrss * 1024L, SelfAliveSeconds());
  std::fclose(f);
}

#endif  // FOOTPRINT_TESTS_WORKLOADS_SELF_REPORT_H_
