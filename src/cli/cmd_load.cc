// footprint load: drive a system under test with MLPerf's load scenarios and measure it;
// footprint evaluate: a manifest's model through the PyTorch agent, scenario by scenario.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/cli.h"
#include "cli/format.h"
#include "cli/load_view.h"
#include "cli/run_options.h"
#include "core/identity.h"
#include "footprint/evaluate.h"
#include "footprint/load.h"
#include "footprint/report.h"
#include "load/load_samples.h"
#include "load/resident_command.h"
#include "util/json_text.h"
#include "util/sha256.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace footprint::cli {
namespace {

void SayOnStderr(const std::string& line) { std::cerr << "footprint: " << line << std::endl; }

// What a load run measured, said on stderr unless `quiet`; its exit status and summary. A
// load that never started because the command was not ready in time exits kExitRunFailed: the
// command's status then is only that of its stopping.
std::pair<int, LoadSummary> ReportLoad(Store& store, const MonitorOutcome& out,
                                       const LoadDriver& driver, bool quiet) {
  std::ostringstream err;
  if (!out.launch_error.empty()) err << "footprint: " << out.launch_error << "\n";
  for (const std::string& w : out.warnings) err << "footprint: warning: " << w << "\n";
  if (!quiet) {
    PrintOutcome(out, store, "", err);
    auto energy = LoadWindowEnergy(store, out.run, out.totals);
    PrintLoadSummary(nlohmann::json::parse(LoadSummaryJson(driver.summary())), out.totals,
                     energy.ok() ? *energy : std::vector<LoadEnergy>{}, "footprint: load ", err);
  }
  std::cerr << err.str();
  return std::make_pair(driver.summary().ready_timed_out ? int{kExitRunFailed} : out.exit_status,
                        driver.summary());
}

// One load run of its command, reported.
Result<std::pair<int, LoadSummary>> RunLoad(Store& store, MonitorOptions o, const LoadOptions& load,
                                            bool quiet) {
  LoadDriver driver(load, SayOnStderr);
  o.driver = &driver;
  FP_ASSIGN_OR_RETURN(MonitorOutcome out, RunMonitored(store, o));
  return ReportLoad(store, out, driver, quiet);
}

// --qps R[,R...]: the rates of a sweep, in the order given.
Result<std::vector<std::pair<std::string, double>>> QpsValues(const std::string& text) {
  std::vector<std::pair<std::string, double>> out;
  for (std::string_view word : Split(text, ',')) {
    word = Trim(word);
    auto value = ParseDouble(word);
    if (!value || !(*value > 0)) {
      return InvalidArgument("--qps takes rates above 0, comma-separated (e.g. 10,20,40), not '" +
                             std::string(word) + "'");
    }
    out.emplace_back(std::string(word), *value);
  }
  return out;
}

// The throughput-latency table of a sweep (or a peak search), one line per rate.
void PrintSweep(const std::vector<std::pair<std::string, LoadSummary>>& sweep, std::ostream& err) {
  char percentile[16];
  std::snprintf(percentile, sizeof percentile, "p%g",
                100 * TargetPercentile(sweep.front().second.options));
  err << "footprint: sweep (target qps: achieved qps, " << percentile << " latency, validity):\n";
  for (const auto& [qps, s] : sweep) {
    auto at = s.latency_s.find(percentile);
    err << "footprint:   " << qps << ": " << FormatValue("count", s.qps) << " qps, " << percentile
        << " " << (at == s.latency_s.end() ? "-" : FormatDuration(at->second))
        << (s.validity.empty() ? "" : ", " + s.validity) << "\n";
  }
}

struct LoadArgs {
  RunArgs run;
  std::string scenario = "single", duration = "10s", latency_bound, timeout = "60s", qps,
              ready_timeout = "10min", percentile, mode = "performance", answers;
  bool find_peak = false;
  int repetitions = 1;
  LoadOptions load;
};

// --mode, --answers and --mlperf-log (InvalidArgument, one line, when wrong).
Status AccuracyOptionsOf(const LoadArgs& args, LoadOptions& load) {
  const std::string mode = Lower(args.mode);
  if (mode != "performance" && mode != "performanceonly" && mode != "accuracy" &&
      mode != "accuracyonly") {
    return InvalidArgument("unknown --mode '" + Inert(args.mode) +
                           "'; use --mode performance or accuracy");
  }
  load.accuracy = mode.starts_with("accuracy");
  if (!args.answers.empty()) {
    FP_ASSIGN_OR_RETURN(load.expected_answers, ReadExpectedAnswers(args.answers));
  }
  std::error_code error;
  if (!load.mlperf_log_dir.empty() && !std::filesystem::is_directory(load.mlperf_log_dir, error)) {
    return InvalidArgument("--mlperf-log " + Inert(load.mlperf_log_dir) +
                           " is not a folder: create it first (MLPerf's log files go there)");
  }
  return Status::Ok();
}

// The load's options from the command line's words (InvalidArgument, one line, when wrong).
Result<LoadOptions> LoadOptionsOf(const LoadArgs& args) {
  LoadOptions load = args.load;
  FP_ASSIGN_OR_RETURN(load.scenario, ParseScenario(args.scenario));
  auto duration = [](const char* option, const std::string& text) -> Result<int64_t> {
    auto ns = ParseDurationNs(text);
    if (!ns.ok()) return InvalidArgument(std::string(option) + ": " + ns.status().message());
    return ns;
  };
  FP_ASSIGN_OR_RETURN(load.min_duration_ns, duration("--duration", args.duration));
  FP_ASSIGN_OR_RETURN(load.query_timeout_ns, duration("--query-timeout", args.timeout));
  FP_ASSIGN_OR_RETURN(load.ready_timeout_ns, duration("--ready-timeout", args.ready_timeout));
  if (!args.latency_bound.empty()) {
    FP_ASSIGN_OR_RETURN(int64_t bound_ns, duration("--latency-bound", args.latency_bound));
    load.latency_bound_s = static_cast<double>(bound_ns) / 1e9;
  }
  if (!args.percentile.empty()) {
    auto percent = ParseDouble(Trim(args.percentile));
    if (!percent) {
      return InvalidArgument("--percentile takes a percent, e.g. 99 or 99.9, not '" +
                             args.percentile + "'");
    }
    load.percentile = *percent / 100;
  }
  FP_RETURN_IF_ERROR(AccuracyOptionsOf(args, load));
  if (args.repetitions < 1 || args.repetitions > kMaxRepetitions) {
    return InvalidArgument("-r takes 1 to " + std::to_string(kMaxRepetitions) + " runs, not " +
                           std::to_string(args.repetitions));
  }
  if (args.repetitions > 1 && args.find_peak) {
    return InvalidArgument("-r and --find-peak each make a group: use one of them");
  }
  if (args.find_peak && (load.scenario != Scenario::kServer || !load.latency_bound_s)) {
    return InvalidArgument(
        "--find-peak searches the server scenario's rate against a bound: add --scenario "
        "server --latency-bound L (e.g. 50ms)");
  }
  return load;
}

// The rates to run, in order: --qps's (a sweep when several), a peak search's first.
Result<std::vector<std::pair<std::string, double>>> RatesOf(const LoadArgs& args) {
  if (args.qps.empty()) {
    return std::vector<std::pair<std::string, double>>{{"", args.find_peak ? 10.0 : 0.0}};
  }
  FP_ASSIGN_OR_RETURN(auto rates, QpsValues(args.qps));
  if (args.repetitions > 1 && rates.size() > 1) {
    return InvalidArgument("-r repeats one load: give --qps one rate, or drop -r for a sweep");
  }
  if (args.find_peak && rates.size() > 1) {
    return InvalidArgument("--find-peak starts from one rate: give --qps R, not a list");
  }
  return rates;
}

// --find-peak: server trials at the rates NextPeakRate picks, each a run of one group (with
// --param qps=R), until the largest valid rate is within 5 % of the smallest invalid one; the
// trials' table and the peak. Exits as the first trial that failed, else 0 when a rate was
// valid, else 1.
Result<int> FindPeak(Store& store, MonitorOptions o, LoadOptions load, bool quiet) {
  o.group_id = NewRunId();
  o.planned_repetitions = kMaxPeakTrials;  // at most
  const double start_qps = load.qps;
  std::vector<PeakTrial> trials;
  std::vector<std::pair<std::string, LoadSummary>> table;
  while (std::optional<double> qps = NextPeakRate(start_qps, trials)) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", *qps);
    load.qps = *qps;
    MonitorOptions each = o;
    each.repetition = static_cast<int>(trials.size()) + 1;
    each.params["qps"] = text;
    FP_ASSIGN_OR_RETURN(auto outcome, RunLoad(store, each, load, true));
    if (!quiet) {
      std::cerr << "footprint: trial " << each.repetition << ": " << text << " queries/s, "
                << outcome.second.validity << "\n";
    }
    table.emplace_back(text, std::move(outcome.second));
    if (outcome.first != 0) return outcome.first;  // the command failed: no rate is known
    trials.push_back({*qps, table.back().second.validity == "valid"});
  }
  PrintSweep(table, std::cerr);
  std::optional<double> peak, next;
  for (const PeakTrial& t : trials) {
    if (t.valid && (!peak || t.qps > *peak)) peak = t.qps;
  }
  for (const PeakTrial& t : trials) {
    if (!t.valid && peak && t.qps > *peak && (!next || t.qps < *next)) next = t.qps;
  }
  std::cerr << "footprint: group " << o.group_id << ": " << trials.size() << " trials; ";
  if (!peak) {
    std::cerr << "no rate was valid against the bound (lowest tried " << trials.back().qps
              << " queries/s): the command cannot meet it, or give a lower --qps to start\n";
    return int{kExitError};
  }
  std::cerr << "peak " << FormatValue("count", *peak) << " queries/s valid"
            << (next ? ", " + FormatValue("count", *next) + " not" : std::string()) << "\n";
  return int{kExitOk};
}

// A run per rate (one for a single rate), and the table of a sweep.
Result<int> RunRates(Store& store, const MonitorOptions& o, LoadOptions load,
                     const std::vector<std::pair<std::string, double>>& rates, bool quiet) {
  int first_failure = 0;
  std::vector<std::pair<std::string, LoadSummary>> sweep;
  for (const auto& [text, qps] : rates) {
    load.qps = qps;
    MonitorOptions each = o;
    if (rates.size() > 1) each.params["qps"] = text;
    FP_ASSIGN_OR_RETURN(auto outcome, RunLoad(store, each, load, quiet));
    if (first_failure == 0) first_failure = outcome.first;
    sweep.emplace_back(text, std::move(outcome.second));
    if (sweep.back().second.ready_timed_out) break;  // the next rate would wait as long
  }
  if (sweep.size() > 1 && !quiet) PrintSweep(sweep, std::cerr);
  return first_failure;
}

// -r N: N runs of one load, stored as one group (with its repetition numbers), as `run -r`
// stores them; stops after the first run that fails. Exits as the first failure, else 0.
Result<int> RunRepetitions(Store& store, MonitorOptions o, const LoadOptions& load, int repetitions,
                           bool quiet) {
  o.group_id = NewRunId();
  o.planned_repetitions = repetitions;
  int done = 0, status = 0;
  while (done < repetitions && status == 0) {
    MonitorOptions each = o;
    each.repetition = ++done;
    if (!quiet) std::cerr << "footprint: [" << done << "/" << repetitions << "]\n";
    FP_ASSIGN_OR_RETURN(auto outcome, RunLoad(store, each, load, quiet));
    status = outcome.first;
  }
  std::cerr << "footprint: group " << o.group_id << ": " << done << " of " << repetitions
            << " repetitions" << (status == 0 ? "" : " (stopped after a run that failed)")
            << "; footprint show group:" << o.group_id << " for their statistics\n";
  return status;
}

// What a run of an evaluation stores in its meta (`evaluation`): the manifest, its checksums
// and the framework as the agent described it, so that the run can be reproduced.
std::string EvaluationMeta(const EvaluationManifest& m, const std::string& describe_json,
                           const EvaluationRun& run) {
  nlohmann::json model = m.model_file.empty()
                             ? nlohmann::json{{"torchvision", m.torchvision},
                                              {"args", nlohmann::json::parse(m.model_args_json)}}
                             : nlohmann::json{{"file", m.model_file}, {"sha256", m.model_sha256}};
  if (!m.graph_file.empty()) {
    const auto digest = DigestFile(m.graph_file);
    model["graph"] = {{"file", m.graph_file},
                      {"sha256", digest ? nlohmann::json(digest->sha256) : nlohmann::json()}};
  }
  if (!m.family.empty()) model["family"] = m.family;
  nlohmann::json evaluation = {{"manifest", nlohmann::json::parse(m.manifest_json)},
                               {"manifest_path", m.path},
                               {"manifest_sha256", m.sha256},
                               {"model", model},
                               {"framework", nlohmann::json::parse(describe_json, nullptr, false)},
                               {"scenario", ScenarioName(run.load.scenario)},
                               {"batch", run.batch},
                               {"trace", m.trace},
                               {"agent", run.command}};
  return JsonText(nlohmann::json{{"evaluation", evaluation}});
}

// The framework as the agent describes it (one line of JSON), checked against the manifest.
Result<std::string> DescribeFramework(const EvaluationManifest& m, const std::string& python) {
  const std::vector<std::string> argv = DescribeCommand(m, python);
  std::optional<std::string> out = Capture(argv);
  if (!out) {
    return InvalidArgument("cannot describe the framework: '" + ShellCommandLine(argv) +
                           "' failed; run it to see why (is torch installed for " + python +
                           "? set framework.python in the manifest or --python)");
  }
  FP_RETURN_IF_ERROR(CheckFramework(m, Trim(*out)));
  return std::string(Trim(*out));
}

// The agent that serves an evaluation's runs one after the other, its model loaded once: the
// runs' command (whose last option is --max-batch B) at the largest B of the runs that share
// it, so that its first warm-up allocates what the largest batch needs. A run whose command
// differs otherwise (the rest of the words) gets an agent of its own.
class EvaluationAgent {
 public:
  explicit EvaluationAgent(const std::vector<EvaluationRun>& runs) : runs_(runs) {}
  // A stop signal (Ctrl-C) reached footprint during a run: the evaluation stops there.
  bool interrupted() const { return interrupted_; }

  // Run `r` as a load of the resident agent (started first if needed). Where no agent starts
  // (the reason said), this run and the next ones of its command start the agent themselves,
  // each a load of its own, which stores why it fails if it does.
  Result<std::pair<int, LoadSummary>> Run(Store& store, const MonitorOptions& o,
                                          const EvaluationRun& r, bool quiet) {
    const std::vector<std::string> key(r.command.begin(), r.command.end() - 2);
    if (agent_ && key != key_) agent_.reset();  // its destructor ends it
    if (!agent_ && key == failed_key_) return RunLoad(store, o, r.load, quiet);
    if (!agent_) {
      key_ = key;
      std::vector<std::string> argv = r.command;
      argv.back() = std::to_string(LargestBatch(key));
      auto started = ResidentCommand::Start(argv, r.load.ready_timeout_ns, *r.load.env);
      if (!started.ok()) {  // e.g. the largest batch does not fit: each run tries its own
        failed_key_ = key;
        SayOnStderr(started.status().message() + "; each run starts the agent itself");
        return RunLoad(store, o, r.load, quiet);
      }
      agent_ = std::move(started).value();
    }
    LoadDriver driver(r.load, SayOnStderr, &agent_->transport());
    FP_ASSIGN_OR_RETURN(MonitorOutcome out,
                        RunResidentLoad(store, o, *agent_, driver, {{"max_batch", r.batch}}));
    if (!driver.resident_ready()) agent_.reset();  // the next run gets a fresh one
    if (out.signal_received != 0) interrupted_ = true;
    return ReportLoad(store, out, driver, quiet);
  }

 private:
  int LargestBatch(const std::vector<std::string>& key) const {
    int largest = 1;
    for (const EvaluationRun& r : runs_) {
      if (std::equal(key.begin(), key.end(), r.command.begin(), r.command.end() - 2)) {
        largest = std::max(largest, r.batch);
      }
    }
    return largest;
  }

  const std::vector<EvaluationRun>& runs_;
  bool interrupted_ = false;
  std::vector<std::string> key_, failed_key_;
  std::unique_ptr<ResidentCommand> agent_;
};

// The evaluation's table: one line per run.
void PrintEvaluation(const std::vector<EvaluationRun>& runs,
                     const std::vector<LoadSummary>& summaries, std::ostream& err) {
  err << "footprint: evaluation (run: queries, queries/s, samples/s, p50 / p90 / p99, "
         "validity):\n";
  for (size_t i = 0; i < summaries.size(); ++i) {
    const LoadSummary& s = summaries[i];
    auto at = [&](const char* p) {
      auto it = s.latency_s.find(p);
      return it == s.latency_s.end() ? std::string("-") : FormatDuration(it->second);
    };
    err << "footprint:   " << Inert(runs[i].name) << ": " << s.completed << ", "
        << FormatValue("count", s.qps) << ", " << FormatValue("count", s.samples_per_s) << ", "
        << at("p50") << " / " << at("p90") << " / " << at("p99")
        << (s.validity.empty() ? "" : ", " + s.validity) << "\n";
  }
}

// The scenario and its schedule: how many queries, at what rate, how long, which samples.
void AddLoadScheduleOptions(CLI::App* cmd, LoadArgs& args) {
  cmd->add_option("--scenario", args.scenario,
                  "single (one query at a time; p90), multi (N samples per query, one at a "
                  "time; p99), server (Poisson arrivals at --qps; p99) or offline (all queries "
                  "at once; samples/s)")
      ->option_text("NAME");
  cmd->add_option("--qps", args.qps,
                  "server: the target rate, queries per second; several, comma-separated, "
                  "make a sweep: one run each (with --param qps=R) and a throughput-latency "
                  "table at the end")
      ->option_text("R[,R...]");
  cmd->add_option("--samples-per-query", args.load.samples_per_query,
                  "multi: samples in each query (default 8)")
      ->option_text("N");
  cmd->add_option("--duration", args.duration,
                  "issue queries at least this long (default 10s; MLPerf's rules: 600s)")
      ->option_text("D");
  cmd->add_option("--min-queries", args.load.min_queries,
                  "and at least this many (default 100; offline: exactly this many)")
      ->option_text("K");
  cmd->add_option("--latency-bound", args.latency_bound,
                  "the latency the scenario's percentile must stay within (e.g. 50ms)")
      ->option_text("L");
  cmd->add_option("--percentile", args.percentile,
                  "the latency percentile judged against --latency-bound and by early "
                  "stopping, in percent (default: 90 for single, 99 otherwise)")
      ->option_text("P");
  cmd->add_option("--seed", args.load.seed, "seed of the server's arrivals (default 1)")
      ->option_text("S");
  cmd->add_option("--sample-seed", args.load.sample_seed,
                  "seed of the sample indices the queries carry, apart from --seed's schedule "
                  "(default 1)")
      ->option_text("S");
  cmd->add_option("--performance-sample-count", args.load.performance_sample_count,
                  "sample indices are drawn uniformly from 0 to N-1 (default: the --answers "
                  "count, else 1024)")
      ->option_text("N");
}

// What the queries are scored against, when the load ends, how often it runs, and how
// queries reach the command (--http).
void AddLoadModeOptions(CLI::App* cmd, LoadArgs& args) {
  cmd->add_option("--mode", args.mode,
                  "performance (default), or accuracy: every sample of --answers issued once "
                  "and each RESULT scored against its expected answer (LoadGen's AccuracyOnly)")
      ->option_text("MODE");
  cmd->add_option("--answers", args.answers,
                  "the expected answers, one per line, line k for sample index k (accuracy "
                  "mode; also sets the performance sample count)")
      ->option_text("FILE");
  cmd->add_option("--mlperf-log", args.load.mlperf_log_dir,
                  "write MLPerf's log files into this existing folder (accuracy mode: "
                  "mlperf_log_accuracy.json)")
      ->option_text("DIR");
  cmd->add_option("--query-timeout", args.timeout,
                  "a query unanswered this long ends the load (default 60s)")
      ->option_text("T");
  cmd->add_option("--ready-timeout", args.ready_timeout,
                  "how long COMMAND may take to say 'ready' (with --http: to take a "
                  "connection) before footprint gives up, stops it and exits 125 (default "
                  "10min)")
      ->option_text("T");
  cmd->add_option("-r,--runs", args.repetitions,
                  "run the load N times, stored as one group (footprint show group:ID); one "
                  "rate only, not with --find-peak")
      ->option_text("N");
  cmd->add_flag("--find-peak", args.find_peak,
                "server: search the largest rate that stays valid against --latency-bound, "
                "starting from --qps (default 10): doubling, then bisecting to within 5 %, at "
                "most 16 trial runs, stored as one group");
  cmd->add_option("--http", args.load.http_url,
                  "COMMAND runs an HTTP server: each query is a POST to URL (on this machine), "
                  "instead of a line on COMMAND's stdin; streamed answers give the time to "
                  "first token and per output token")
      ->option_text("URL");
  cmd->add_option("--body", args.load.http_body,
                  "with --http: each POST's body, {id} and {samples} replaced by the query's "
                  "(default '{\"id\": {id}, \"samples\": [{samples}]}')")
      ->option_text("TEMPLATE");
}

// footprint load once its options are parsed: one run, a sweep of rates, repetitions or a
// search for the peak rate.
Result<int> RunLoadCommand(LoadArgs& args, CLI::App& cmd, const std::vector<std::string>& command) {
  FP_ASSIGN_OR_RETURN(LoadOptions load, LoadOptionsOf(args));
  FP_ASSIGN_OR_RETURN(auto rates, RatesOf(args));
  load.qps = rates.front().second;
  FP_RETURN_IF_ERROR(ValidateLoadOptions(load));
  FP_ASSIGN_OR_RETURN(MonitorOptions o, CommandOptions(args.run, cmd, command));
  FP_ASSIGN_OR_RETURN(auto store, OpenStore(args.run.db));
  if (args.find_peak) return FindPeak(*store, o, load, args.run.quiet);
  if (args.repetitions > 1) {
    return RunRepetitions(*store, o, load, args.repetitions, args.run.quiet);
  }
  return RunRates(*store, o, load, rates, args.run.quiet);
}

struct EvaluateArgs {
  RunArgs run;
  std::string manifest, python = "python3";
  bool dry_run = false, agent_per_run = false;
};

// The options of the footprint load run that is run `r` of manifest `m`.
MonitorOptions EvaluationRunOptions(const EvaluationManifest& m, const std::string& framework,
                                    const EvaluationRun& r, const RunArgs& run) {
  MonitorOptions o;
  o.command = r.command;
  o.name = r.name;
  o.params = r.params;
  o.tags = {{"evaluation", m.name}};
  o.use_cgroup = !run.no_cgroup;
  o.record_git = !run.no_git;
  // Without the system level, the series are sampled once a second: the totals and
  // peaks stay exact (they come from the kernel's accounts).
  if (m.trace.count("system") == 0) o.interval_ns = 1'000'000'000;
  o.extra_meta_json = EvaluationMeta(m, framework, r);
  return o;
}

// footprint evaluate once its options are parsed: the manifest checked, then its runs in turn.
Result<int> RunEvaluateCommand(const EvaluateArgs& args) {
  FP_ASSIGN_OR_RETURN(EvaluationManifest m, LoadManifest(args.manifest));
  FP_RETURN_IF_ERROR(CheckModelFile(m, Env::Default()));
  const std::string python = m.python.empty() ? args.python : m.python;
  const std::vector<EvaluationRun> runs = PlanEvaluation(m, python);
  if (args.dry_run) {
    for (const EvaluationRun& r : runs) {
      std::cout << r.name << ": " << ShellCommandLine(r.command) << "\n";
    }
    return kExitOk;
  }
  FP_ASSIGN_OR_RETURN(std::string framework, DescribeFramework(m, python));
  FP_ASSIGN_OR_RETURN(auto store, OpenStore(args.run.db));
  std::vector<LoadSummary> summaries;
  int status = kExitOk;
  EvaluationAgent agent(runs);
  for (const EvaluationRun& r : runs) {
    const MonitorOptions o = EvaluationRunOptions(m, framework, r, args.run);
    // An agent in a container runs per run: measured as the container (docs/containers.md).
    const bool per_run = args.agent_per_run || !m.container.image.empty();
    FP_ASSIGN_OR_RETURN(auto done, per_run ? RunLoad(*store, o, r.load, args.run.quiet)
                                           : agent.Run(*store, o, r, args.run.quiet));
    if (done.first != 0) status = kExitError;
    summaries.push_back(std::move(done.second));
    if (agent.interrupted()) break;
  }
  PrintEvaluation(runs, summaries, std::cerr);
  return status;
}

}  // namespace

Action AddLoad(CLI::App& app, const std::vector<std::string>& command) {
  auto args = std::make_shared<LoadArgs>();
  CLI::App* cmd = app.add_subcommand(
      "load",
      "Drive COMMAND, a system under test, with an MLPerf-style load scenario through its "
      "stdin and stdout, and measure it: each query's latency from its scheduled time, the "
      "percentiles, and everything footprint run measures.");
  AddMeasureOptions(cmd, &args->run);
  AddLoadScheduleOptions(cmd, *args);
  AddLoadModeOptions(cmd, *args);
  cmd->prefix_command();
  cmd->footer(
      "COMMAND is everything after --. It first writes a line 'ready' on its stdout once it "
      "can take queries (the load starts then). footprint writes one query per line to its "
      "stdin, "
      "ID<TAB>PAYLOAD (PAYLOAD: the query's sample indices, comma-separated), and reads one "
      "line per answered query from its stdout, ID<TAB>RESULT, in any order. When the load is "
      "done footprint closes COMMAND's stdin: it should then exit. Latency runs from each "
      "query's scheduled time, so a lagging issuer is charged. With --http URL, COMMAND is a "
      "server instead: the load starts once URL takes a connection, each query is a POST "
      "answered by a 2xx response, and footprint stops COMMAND with SIGTERM at the end (its "
      "normal end). While footprint waits for 'ready' (or the connection) it says so after "
      "5 s; after --ready-timeout it stops COMMAND. See docs/evaluation.md.\n\n"
      "footprint exits with the command's status, and with 125 when footprint itself fails "
      "or COMMAND was not ready within --ready-timeout (2 for bad options).\n\n"
      "Examples:\n"
      "  footprint load --scenario single --duration 30s -- python3 sut.py\n"
      "  footprint load --scenario server --qps 50 --latency-bound 100ms -- ./server\n"
      "  footprint load --scenario offline --min-queries 2048 -- python3 sut.py --batch 64\n"
      "  footprint load --scenario server --qps 5 --http http://127.0.0.1:8000/generate \\\n"
      "      --body '{\"prompt\": \"query {id}\", \"stream\": true}' -- ./llm-server --port 8000");
  return [args, cmd, &command]() -> int {
    Result<int> status = RunLoadCommand(*args, *cmd, command);
    if (status.ok()) return *status;
    if (status.status().code() == StatusCode::kInvalidArgument) {
      Fail(status.status());
      return kExitUsage;
    }
    Fail(status.status());
    return kExitRunFailed;
  };
}

Action AddEvaluate(CLI::App& app) {
  auto args = std::make_shared<EvaluateArgs>();
  CLI::App* cmd = AddDbSubcommand(
      app, "evaluate",
      "Evaluate a model as a manifest pins it (model, framework, inputs, batch sizes, load "
      "scenarios, trace levels): one footprint load run of the PyTorch agent per scenario, "
      "batch size and rate, each stored with the manifest and the framework it ran on.",
      args->run.db);
  cmd->add_option("MANIFEST", args->manifest, "the manifest (YAML; docs/evaluation.md)")
      ->required();
  cmd->add_option("--python", args->python,
                  "the interpreter of the agent, unless the manifest's framework.python names "
                  "one (default python3)")
      ->option_text("PATH");
  cmd->add_flag("--dry-run", args->dry_run, "print the runs and their commands; run nothing");
  cmd->add_flag("--agent-per-run", args->agent_per_run,
                "start the agent again for each run (by default one agent process, its model "
                "loaded once, serves every run in turn)");
  cmd->add_flag("--no-cgroup", args->run.no_cgroup,
                "with --agent-per-run: do not put the agent in a cgroup of its own (totals "
                "then come from wait4); one agent for every run has none (its process is "
                "walked)");
  cmd->add_flag("--no-git", args->run.no_git, "do not record the git commit of the current folder");
  cmd->add_flag("-q,--quiet", args->run.quiet, "print only the table at the end");
  cmd->footer(
      "Before anything runs, the model file's sha256 is checked against the manifest's, and the "
      "framework's version (python -m footprint.agent --describe) against its constraint: a "
      "mismatch is refused with one line.\n\n"
      "Exit status: 0 when every run was ok, 1 when one failed, 2 for a manifest that is wrong "
      "or refused (nothing runs), 125 when footprint itself fails.\n\n"
      "Examples:\n"
      "  footprint evaluate examples/evaluate/resnet18-cpu.yaml\n"
      "  footprint evaluate --dry-run manifest.yaml\n"
      "  footprint evaluate -o runs.db --python /usr/bin/python3 manifest.yaml");
  return [args]() -> int {
    Result<int> outcome = RunEvaluateCommand(*args);
    return outcome.ok() ? *outcome : FailOnInputs(outcome.status(), kExitRunFailed);
  };
}

}  // namespace footprint::cli
