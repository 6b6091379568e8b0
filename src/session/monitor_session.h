// MonitorSession: the measuring pipeline of one run, assembled in exactly one place — the
// probes' series registered in the store, the bounded queue, the sampler thread (absolute
// deadlines), the writer thread (batched transactions) — and what footprint itself cost while
// it ran; and the run's life in the store: its creation with its series, its start (t0) and
// end on the session's clock, and its end stored, or, when something fails before it starts,
// the reason it failed. `footprint run` and `experiment` (through RunMonitored), the Slurm
// agent, the resident load, an attached container and the in-process API (Benchmark) all
// measure through it; each only describes its run and what to measure (a ProbeChoice), and the
// session picks the probes (ChooseProbes) and computes the totals the caller's kernel accounts
// give (ComputeRunTotals, in Finish).
//
// Life cycle: construct (the probes are picked and declare their series) -> CreateRun (the run and
// its series in one commit) -> AttachToCommand -> Start() (t0) -> Stop() (the end) ->
// Finish(findings) -> StoreEnd(totals). Between CreateRun and Start, Abandon(why) ends the run
// instead: a run the session created is never left 'running', to be taken for interrupted.
//
// Thread-safety: one controlling thread calls everything but SetInterval, which any thread may
// call between Start and Stop. The store is used by the writer thread between Start and Stop
// and by the controlling thread otherwise.
#ifndef FOOTPRINT_SESSION_MONITOR_SESSION_H_
#define FOOTPRINT_SESSION_MONITOR_SESSION_H_

#include <sys/resource.h>
#include <time.h>

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "footprint/env.h"
#include "footprint/status.h"
#include "footprint/store.h"
#include "probe/probe.h"
#include "sampler/sample_queue.h"
#include "sampler/sampler.h"
#include "sampler/writer.h"
#include "session/probe_set.h"
#include "session/totals.h"

namespace footprint {

// "footprint: warning: LINE" on stderr, in one write.
void WarnOnStderr(const std::string& line);

class MonitorSession {
 public:
  struct Options {
    Env* env = &Env::Default();   // must outlive the session
    MetricIntervals intervals{};  // per metric; 0 = not sampled
    int64_t flush_interval_ns = 500'000'000;
    size_t queue_capacity = 1 << 16;
    // True when footprint's process does nothing but monitor (`footprint run`): its own CPU
    // time and peak RSS during the session are footprint's cost. False in-process (the API),
    // where the process is the measured program: only footprint's threads are its cost.
    bool owns_process = true;
    // Hears, while the run goes on, of writes that fail and samples that are lost (the
    // Writer's notice: rate-limited lines, on the writer thread). None: nothing is said
    // before Finish.
    Writer::Notice on_data_loss = WarnOnStderr;
  };

  // The probes `choice` describes (ChooseProbes), on options.env's /proc and /sys; a GPU's
  // meta.gpu goes into `meta`, and the metrics choice.exact_intervals names are woken at their
  // own interval even beside a kernel buffer. The store must outlive the session.
  MonitorSession(Store& store, std::string run_id, ProbeChoice choice, nlohmann::json& meta,
                 const Options& options);
  // Probes the caller made, owned: for tests' own probes (a driven clock's); production
  // callers describe a ProbeChoice. No tree, no container.
  MonitorSession(Store& store, std::string run_id, std::vector<std::unique_ptr<Probe>> probes,
                 const Options& options);
  ~MonitorSession();  // stops the threads if they still run
  MonitorSession(const MonitorSession&) = delete;
  MonitorSession& operator=(const MonitorSession&) = delete;

  // Creates `run` (whose id is the session's) and its series in one commit, its start the
  // Env's wall clock now and its meta_json `meta`. The session keeps both (they must outlive
  // it): it writes the run's start and end times into `run`, and `meta` is what it stores as
  // the run's metadata when the run ends. Once, before Start.
  Status CreateRun(RunRecord& run, nlohmann::json& meta);
  // Probes that follow the command's processes themselves (hardware counters) attach to it
  // while it waits at its start gate.
  void AttachToCommand(pid_t command);
  // Anchors the run's clock: t0 on the Env's monotonic clock (returned; the sampler's first
  // pass is there) and the run's start on its wall clock; then starts the writer, then the
  // sampler. After CreateRun. When a thread cannot be started: nothing is left running, the
  // run is abandoned (Abandon) and the error, Internal, returned.
  Result<int64_t> Start();
  // Start for a caller that waits for its command itself and calls Tick() at next_tick_ns():
  // the first tick (due at t0, returned) is the sampler's first pass, on the calling thread;
  // the next, at the sampler's next deadline or the first flush, starts the writer and the
  // sampler threads. A command that ends before then costs no thread (0.5 ms of CPU and of
  // wall time less for `footprint run -- true`). After CreateRun; nothing here fails.
  int64_t StartDeferred();
  // When Tick is due (monotonic ns); INT64_MAX once the threads run.
  int64_t next_tick_ns() const { return next_tick_ns_; }
  // What is due after StartDeferred, whether or not its time came (see there). When a thread
  // cannot be started, the run goes on with what was sampled so far, and Finish says so.
  void Tick();
  // Stores the run as failed, ended now, with meta.launch_error `why`, and returns `why`: for
  // what fails after CreateRun and before Start (the command's start). A failure to store it
  // is not reported: `why` is the error to give. Nothing before CreateRun.
  Status Abandon(Status why);
  // Changes a sampled metric's interval at once (supervised scopes ask for finer ones).
  void SetInterval(MetricId metric, int64_t interval_ns);
  // The CPU clocks of the session's threads, between Start and Stop (the in-process tree
  // probe subtracts them from the process it shares with them).
  std::vector<clockid_t> ThreadCpuClocks();
  // Anchors the run's end (its ended_at from t0's wall clock and the monotonic time since
  // t0), then the sampler's last pass, then the writer's last flush. Idempotent.
  void Stop();
  // After Stop: monotonic ns from t0 to the end.
  int64_t duration_ns() const { return end_ns_ - t0_ns_; }
  // After Stop: what the totals take from the session itself — the run's duration and, with a
  // tree, its sampled peaks (memory, the sum of RSS, the largest process, the page cache) —
  // for the caller to add the kernel's accounts to and hand to ComputeRunTotals.
  TotalsInputs SampledTotalsInputs() const;
  // After Stop: the run's totals (ComputeRunTotals) into findings.totals, where they came from
  // into meta.sources (beside what it held), meta.accounting and meta.memory_peaks; then each
  // probe's findings (a probe whose figures join the totals, a container's, says so in
  // meta.sources), footprint's own cost (totals monitor_cpu_s and, when it
  // owns the process, monitor_peak_rss_bytes), meta.monitor (sampler, writer, losses), one
  // warning per kind of data that did not reach the store, when samples were lost,
  // meta.incomplete: why the run's series are not whole, and the rate each metric's series
  // achieved (meta.achieved_intervals_ns, the slowest series of each metric) with, for those
  // more than a quarter below the asked rate, why (meta.below_asked_rate).
  void Finish(const RunTotals& totals, ProbeFindings& findings);
  // After Finish: stores the run's end — its status and exit code as the caller set them in
  // the run, its times, `meta` as it is now, `totals`. When that fails the run will show as
  // interrupted: a warning says so and the store's error is returned (what was measured must
  // still reach the caller).
  Status StoreEnd(const std::map<std::string, double>& totals, std::vector<std::string>& warnings);

  // After Stop: CPU time of the session's threads.
  double threads_cpu_s() const;

  // The process-tree probe the session picked (its peaks and CPU feed the totals), and a
  // container's probe when the choice had one; null otherwise. Owned by the session.
  ProcessTreeProbe* tree() const { return tree_; }
  ContainerProbe* container() const { return container_; }

 private:
  MonitorSession(Store& store, std::string run_id, ChosenProbes chosen, const Options& options);
  // t0 on the Env's monotonic clock and the run's start on its wall clock, both now.
  void AnchorStart();

  Store& store_;
  const std::string run_id_;
  const Options options_;
  ProcessTreeProbe* tree_;
  ContainerProbe* container_;
  std::unique_ptr<ContainerMembers> members_;  // the GPU probe's: outlives the sampler
  SampleQueue queue_;
  Sampler sampler_;
  Writer writer_;
  std::vector<int64_t> series_ids_;
  RunRecord* run_ = nullptr;  // the caller's, from CreateRun
  nlohmann::json* meta_ = nullptr;
  int64_t t0_ns_ = 0, end_ns_ = 0;
  int64_t next_tick_ns_ = INT64_MAX;  // after StartDeferred, until the threads run
  bool first_pass_done_ = false;      // StartDeferred's first tick
  std::string thread_error_;          // why Tick could not start the threads
  bool started_ = false, stopped_ = false;
  rusage self_at_start_ = {};
  bool peak_reset_ = false;  // VmHWM was reset at construction: the peak is this run's

  void NoteAchievedRates(nlohmann::json& meta) const;
};

}  // namespace footprint

#endif  // FOOTPRINT_SESSION_MONITOR_SESSION_H_
