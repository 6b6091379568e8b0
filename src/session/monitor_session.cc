#include "session/monitor_session.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <system_error>

#include "util/file.h"
#include "util/json_text.h"
#include "util/proc_parse.h"
#include "util/rusage.h"

namespace footprint {

void WarnOnStderr(const std::string& line) {
  const std::string text = "footprint: warning: " + line + "\n";
  (void)!::write(STDERR_FILENO, text.data(), text.size());
}

MonitorSession::MonitorSession(Store& store, std::string run_id, ProbeChoice choice,
                               nlohmann::json& meta, const Options& options)
    : MonitorSession(store, std::move(run_id), ChooseProbes(*options.env, std::move(choice), meta),
                     options) {}

MonitorSession::MonitorSession(Store& store, std::string run_id,
                               std::vector<std::unique_ptr<Probe>> probes, const Options& options)
    : MonitorSession(store, std::move(run_id), ChosenProbes{.probes = std::move(probes)}, options) {
}

MonitorSession::MonitorSession(Store& store, std::string run_id, ChosenProbes chosen,
                               const Options& options)
    : store_(store),
      run_id_(std::move(run_id)),
      options_(options),
      tree_(chosen.tree),
      container_(chosen.container),
      members_(std::move(chosen.members)),
      queue_(options.queue_capacity),
      sampler_(*options.env, std::move(chosen.probes), options.intervals, queue_,
               chosen.exact_intervals),
      writer_(*options.env, store, queue_, run_id_, options.flush_interval_ns) {
  writer_.set_notice(options.on_data_loss);
  // footprint's cost of this run is counted from here: the probes' discovery, the series, the
  // command's start, sampling, writing and the end.
  ::getrusage(RUSAGE_SELF, &self_at_start_);
  // Resets this process's VmHWM to its current RSS (Linux >= 4.0), so that the peak read at
  // the end is this run's, not that of an earlier repetition in the same process.
  peak_reset_ =
      options_.owns_process && WriteFile(options_.env->ProcRoot() + "/self/clear_refs", "5").ok();
}

MonitorSession::~MonitorSession() { Stop(); }

Status MonitorSession::CreateRun(RunRecord& run, nlohmann::json& meta) {
  run_ = &run;
  meta_ = &meta;
  run.started_at_ns = options_.env->RealtimeNs();  // until Start anchors it
  run.meta_json = JsonText(meta);
  return store_.InTransaction([&]() -> Status {
    FP_RETURN_IF_ERROR(store_.CreateRun(run));
    FP_ASSIGN_OR_RETURN(series_ids_, RegisterSeries(store_, run_id_, sampler_.series()));
    return Status::Ok();
  });
}

void MonitorSession::AttachToCommand(pid_t command) {
  for (Probe* probe : sampler_.probes()) probe->AttachToCommand(command);
}

void MonitorSession::AnchorStart() {
  t0_ns_ = options_.env->MonotonicNs();
  run_->started_at_ns = options_.env->RealtimeNs();
}

Result<int64_t> MonitorSession::Start() {
  AnchorStart();
  try {
    writer_.Start();
    started_ = true;
    sampler_.Start(t0_ns_, series_ids_);
  } catch (const std::system_error& e) {
    Stop();
    return Abandon(InternalError(std::string("cannot start footprint's threads: ") + e.what()));
  }
  return t0_ns_;
}

int64_t MonitorSession::StartDeferred() {
  AnchorStart();
  started_ = true;
  sampler_.Begin(t0_ns_, series_ids_);
  next_tick_ns_ = t0_ns_;
  return t0_ns_;
}

void MonitorSession::Tick() {
  if (next_tick_ns_ == INT64_MAX) return;
  if (!first_pass_done_) {
    first_pass_done_ = true;
    // The writer's first flush is due at the flush interval even when nothing is sampled.
    next_tick_ns_ = std::min(sampler_.FirstPass(), t0_ns_ + options_.flush_interval_ns);
    return;
  }
  next_tick_ns_ = INT64_MAX;
  try {
    writer_.Start();
    sampler_.StartThread();
  } catch (const std::system_error& e) {
    thread_error_ = e.what();
  }
}

Status MonitorSession::Abandon(Status why) {
  if (run_ == nullptr) return why;
  run_->status = RunStatus::kFailed;
  run_->ended_at_ns = options_.env->RealtimeNs();
  (*meta_)["launch_error"] = why.message();
  run_->meta_json = JsonText(*meta_);
  (void)store_.FinishRun(*run_, {});
  return why;
}

void MonitorSession::SetInterval(MetricId metric, int64_t interval_ns) {
  sampler_.SetInterval(metric, interval_ns);
}

std::vector<clockid_t> MonitorSession::ThreadCpuClocks() {
  clockid_t writer_clock;
  pthread_getcpuclockid(writer_.native_handle(), &writer_clock);
  return {writer_clock};  // the sampler subtracts its own thread's time itself
}

void MonitorSession::Stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  end_ns_ = options_.env->MonotonicNs();
  run_->ended_at_ns = run_->started_at_ns + (end_ns_ - t0_ns_);
  sampler_.Stop();
  writer_.Stop();
}

TotalsInputs MonitorSession::SampledTotalsInputs() const {
  TotalsInputs in;
  in.duration_ns = duration_ns();
  if (tree_ == nullptr) return in;
  in.sampled_max_process_bytes = tree_->peak_process_rss_bytes();
  in.sampled_rss_sum_peak_bytes = tree_->peak_rss_sum_bytes();
  in.sampled_memory_peak_bytes = tree_->peak_memory_bytes();
  in.memory_from_cgroup = tree_->memory_from_cgroup();
  in.sampled_page_cache_peak_bytes = tree_->peak_page_cache_bytes();
  return in;
}

double MonitorSession::threads_cpu_s() const {
  return static_cast<double>(sampler_.stats().cpu_ns) / 1e9 +
         RusageCpuSeconds(writer_.stats().usage);
}

namespace {

// Why series `r` got fewer samples than asked: woken less often beside a kernel buffer, its
// reads spaced out, or passes that missed their deadlines (`missed` of them in the run).
std::string WhyBelowRate(const Sampler::SeriesRate& r, uint64_t missed) {
  const std::string name(InfoOf(r.series.metric).name);
  if (r.woken_interval_ns > r.asked_interval_ns) {
    return "woken every " + std::to_string(r.woken_interval_ns / 1'000'000) +
           " ms beside the kernel's ring buffer, which samples cpu at the asked rate without "
           "waking footprint; --interval " +
           name + "=INTERVAL wakes it at INTERVAL";
  }
  if (r.samples * 5 < r.due_passes * 4) {
    return "spaced out, read at " + std::to_string(r.samples) + " of " +
           std::to_string(r.due_passes) + " passes (a costly read kept to its share of a core)";
  }
  return std::to_string(missed) + " deadlines missed (a busy machine, or passes too long)";
}

// The run's totals, and where they came from beside what meta.sources held already.
void AddRunTotals(const RunTotals& run_totals, ProbeFindings& findings) {
  for (const auto& [name, value] : run_totals.totals) findings.totals[name] = value;
  if (run_totals.sources.is_object()) {
    nlohmann::json& sources = findings.meta["sources"];
    if (!sources.is_object()) sources = nlohmann::json::object();
    sources.update(run_totals.sources);
  }
  if (!run_totals.accounting.is_null()) findings.meta["accounting"] = run_totals.accounting;
  if (!run_totals.memory_peaks.is_null()) findings.meta["memory_peaks"] = run_totals.memory_peaks;
}

}  // namespace

void MonitorSession::NoteAchievedRates(nlohmann::json& meta) const {
  const uint64_t missed = sampler_.stats().missed_deadlines;
  nlohmann::json achieved = nlohmann::json::object();
  for (const Sampler::SeriesRate& r : sampler_.SeriesRates()) {
    if (r.achieved_interval_ns <= 0) continue;
    const std::string name(InfoOf(r.series.metric).name);
    if (achieved.value(name, int64_t{0}) >= r.achieved_interval_ns) continue;  // keep the slowest
    achieved[name] = r.achieved_interval_ns;
    // Below the asked rate: more than a quarter slower (a pass a few ms late is not).
    if (r.achieved_interval_ns * 4 <= r.asked_interval_ns * 5) continue;
    meta["below_asked_rate"][name] = WhyBelowRate(r, missed);
  }
  if (!achieved.empty()) meta["achieved_intervals_ns"] = std::move(achieved);
}

void MonitorSession::Finish(const RunTotals& run_totals, ProbeFindings& findings) {
  AddRunTotals(run_totals, findings);
  for (Probe* probe : sampler_.probes()) probe->Finish(findings);
  auto& totals = findings.totals;
  nlohmann::json& monitor = findings.meta["monitor"];
  if (options_.owns_process) {
    rusage self;
    ::getrusage(RUSAGE_SELF, &self);
    totals["monitor_cpu_s"] = RusageCpuSeconds(self) - RusageCpuSeconds(self_at_start_);
    // VmHWM, not ru_maxrss: the kernel starts a process's ru_maxrss at its parent's resident
    // size when it was started with vfork/posix_spawn (as Python's subprocess does), so
    // ru_maxrss could report the parent's memory as footprint's; and only VmHWM can be reset.
    auto status = ReadWholeFile(options_.env->ProcRoot() + "/self/status");
    std::optional<int64_t> hwm_kib = status.ok() ? FindKeyedValue(*status, "VmHWM") : std::nullopt;
    totals["monitor_peak_rss_bytes"] = static_cast<double>(hwm_kib.value_or(self.ru_maxrss)) * 1024;
    monitor["peak_rss_since"] = peak_reset_ ? "run start (VmHWM reset through clear_refs)"
                                            : "footprint's start (VmHWM could not be reset)";
  } else {
    totals["monitor_cpu_s"] = threads_cpu_s();
  }
  NoteAchievedRates(findings.meta);
  const Sampler::Stats ss = sampler_.stats();
  const Writer::Stats ws = writer_.stats();
  monitor["sampler"] = {{"passes", ss.passes},
                        {"missed_deadlines", ss.missed_deadlines},
                        {"samples", ss.samples},
                        {"cpu_s", static_cast<double>(ss.cpu_ns) / 1e9}};
  monitor["writer"] = {{"flushes", ws.flushes},
                       {"samples_written", ws.samples_written},
                       {"failed_flushes", ws.failed_flushes}};
  const uint64_t lost = queue_.dropped() + ws.samples_dropped + ws.samples_unwritten;
  monitor["samples_dropped"] = lost;
  monitor["write_failures"] = ws.failed_flushes;
  if (lost > 0) {
    findings.meta["incomplete"] =
        std::to_string(lost) + " of " + std::to_string(lost + ws.samples_written) +
        " samples were lost" +
        (ws.failed_flushes > 0 ? " (" + ws.first_error + ")" : " (the database could not keep up)");
  }
  if (!thread_error_.empty()) {
    const std::string why = "footprint could not start its sampling threads (" + thread_error_ +
                            "): the series hold the run's first and last samples only";
    nlohmann::json& incomplete = findings.meta["incomplete"];
    incomplete = incomplete.is_string() ? incomplete.get<std::string>() + "; " + why : why;
    findings.warnings.push_back(why);
  }
  if (queue_.dropped() > 0) {
    findings.warnings.push_back(std::to_string(queue_.dropped()) +
                                " samples were dropped because the database could not keep up");
  }
  if (ws.samples_dropped + ws.samples_unwritten > 0) {
    findings.warnings.push_back(std::to_string(ws.samples_dropped + ws.samples_unwritten) +
                                " samples were lost because the database kept failing");
  }
  if (ws.failed_flushes > 0) {
    monitor["writer"]["first_error"] = ws.first_error;
    monitor["writer"]["last_error"] = ws.last_error;
    findings.warnings.push_back(std::to_string(ws.failed_flushes) +
                                " writes to the database failed; first error: " + ws.first_error);
  }
}

Status MonitorSession::StoreEnd(const std::map<std::string, double>& totals,
                                std::vector<std::string>& warnings) {
  run_->meta_json = JsonText(*meta_);
  Status st = store_.FinishRun(*run_, totals);
  if (!st.ok()) {
    warnings.push_back("the end of the run could not be stored (" + st.message() +
                       "); it will show as interrupted");
  }
  return st;
}

}  // namespace footprint
