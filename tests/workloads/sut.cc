// sut MODE MS THREADS LOG: a system under test for `footprint load` with known service times.
// Says `ready`, then reads queries `ID<TAB>SAMPLES` from stdin; THREADS workers each take one,
// spend its service time sleeping, and answer `ID<TAB>ok` on stdout (so answers come out of order
// when THREADS > 1 and the times differ). At end-of-file it answers what is left and exits 0.
//   fixed    MS milliseconds per query
//   exp      exponential, mean MS (seed 7)
//   bimodal  MS, one query in ten 10 x MS (seed 7)
//   crash    MS per query; after 20 answers it exits with status 3
//   garbage  MS per query, and a line that is no answer after each answer
//   hang     MS per query; from the 6th query on it answers nothing and ignores end-of-file
//   busy     MS milliseconds of CPU per query (spinning, not sleeping)
//   accuracy MS per query; RESULT is `label-I` for each sample index I of the query
//            (comma-separated), but `wrong` for every index that $SUT_WRONG_EVERY (default 4)
//            divides: a known fraction of right answers
// $SUT_STARTUP_CPU_MS: CPU it spins before `ready` (a model's load), not the queries' cost.
// LOG: each answered query's `ID SAMPLES RECEIVED_NS SENT_NS` (CLOCK_MONOTONIC minus
// $FOOTPRINT_T0_NS, the run's timeline), the ground truth the tests compare with.
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iostream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

int64_t Now(int64_t t0) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * int64_t{1'000'000'000} + ts.tv_nsec - t0;
}

// Spins on the CPU for `ms` of this thread's CPU time.
void Spin(double ms) {
  timespec start, now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  do {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) * 1e3 + (now.tv_nsec - start.tv_nsec) / 1e6 < ms);
}

struct Query {
  std::string id;
  std::string payload;  // the sample indices, comma-separated
  int samples;
  int64_t received_ns;
  double service_ms;
};

// The accuracy mode's RESULT for `payload`: each index's label, or `wrong` where
// `wrong_every` divides it.
std::string Answer(const std::string& payload, long wrong_every) {
  std::string result;
  size_t start = 0;
  for (;;) {
    const size_t comma = payload.find(',', start);
    const long index = std::atol(payload.substr(start, comma - start).c_str());
    if (!result.empty()) result += ',';
    result += index % wrong_every == 0 ? "wrong" : "label-" + std::to_string(index);
    if (comma == std::string::npos) return result;
    start = comma + 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr,
                 "usage: sut fixed|exp|bimodal|crash|garbage|hang|busy|accuracy MS THREADS LOG\n");
    return 2;
  }
  const std::string mode = argv[1];
  const double ms = std::atof(argv[2]);
  const int threads = std::atoi(argv[3]);
  FILE* log = std::fopen(argv[4], "w");
  const char* t0_text = std::getenv("FOOTPRINT_T0_NS");
  const int64_t t0 = t0_text ? std::atoll(t0_text) : 0;
  const char* wrong_text = std::getenv("SUT_WRONG_EVERY");
  const long wrong_every = wrong_text ? std::atol(wrong_text) : 4;
  if (!log || threads < 1 || wrong_every < 1) return 2;
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> exponential(1.0 / ms);
  std::uniform_int_distribution<int> tenth(0, 9);
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Query> queue;
  bool eof = false;
  int answered = 0;
  auto work = [&] {
    for (;;) {
      Query q;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return eof || !queue.empty(); });
        if (queue.empty()) return;
        q = queue.front();
        queue.pop_front();
      }
      if (mode == "busy") {
        Spin(q.service_ms);
      } else {
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(q.service_ms));
      }
      std::lock_guard<std::mutex> lock(mu);
      if (mode == "hang" && answered >= 5) continue;
      const int64_t sent_ns = Now(t0);  // before the answer leaves
      const std::string result = mode == "accuracy" ? Answer(q.payload, wrong_every) : "ok";
      std::printf("%s\t%s\n", q.id.c_str(), result.c_str());
      if (mode == "garbage") std::printf("this is no answer\n");
      std::fflush(stdout);
      std::fprintf(log, "%s %d %lld %lld\n", q.id.c_str(), q.samples,
                   static_cast<long long>(q.received_ns), static_cast<long long>(sent_ns));
      std::fflush(log);
      if (++answered == 20 && mode == "crash") std::_Exit(3);
    }
  };
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(work);
  if (const char* startup = std::getenv("SUT_STARTUP_CPU_MS")) Spin(std::atof(startup));
  std::printf("ready\n");  // the line protocol: queries come after it
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    const size_t tab = line.find('\t');
    Query q{line.substr(0, tab), tab == std::string::npos ? "" : line.substr(tab + 1), 1, Now(t0),
            ms};
    for (size_t i = tab + 1; tab != std::string::npos && i < line.size(); ++i) {
      q.samples += line[i] == ',';
    }
    std::lock_guard<std::mutex> lock(mu);
    if (mode == "exp") q.service_ms = exponential(rng);
    if (mode == "bimodal" && tenth(rng) == 0) q.service_ms = 10 * ms;
    queue.push_back(q);
    cv.notify_one();
  }
  if (mode == "hang") pause();  // ignores the end of its input
  {
    std::lock_guard<std::mutex> lock(mu);
    eof = true;
  }
  cv.notify_all();
  for (auto& t : pool) t.join();
  return 0;
}
