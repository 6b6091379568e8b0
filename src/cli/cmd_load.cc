// footprint load: drive a system under test with MLPerf's load scenarios and measure it;
// footprint evaluate: a manifest's model through the PyTorch agent, scenario by scenario.
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/cli.h"
#include "cli/format.h"
#include "cli/load_view.h"
#include "cli/run_options.h"
#include "footprint/evaluate.h"
#include "footprint/load.h"
#include "footprint/report.h"
#include "util/json_text.h"
#include "util/sha256.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace footprint::cli {
namespace {

// One load run: its exit status and what it measured, said on stderr unless `quiet`.
Result<std::pair<int, LoadSummary>> RunLoad(Store& store, MonitorOptions o, const LoadOptions& load,
                                            bool quiet) {
  LoadDriver driver(load);
  o.driver = &driver;
  FP_ASSIGN_OR_RETURN(MonitorOutcome out, RunMonitored(store, o));
  std::ostringstream err;
  if (!out.launch_error.empty()) err << "footprint: " << out.launch_error << "\n";
  for (const std::string& w : out.warnings) err << "footprint: warning: " << w << "\n";
  if (!quiet) {
    PrintOutcome(out, store.location(), "", err);
    auto energy = LoadWindowEnergy(store, out.run, out.totals);
    PrintLoadSummary(nlohmann::json::parse(LoadSummaryJson(driver.summary())), out.totals,
                     energy.ok() ? *energy : std::vector<LoadEnergy>{}, "footprint: load ", err);
  }
  std::cerr << err.str();
  return std::make_pair(out.exit_status, driver.summary());
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

// The throughput-latency table of a sweep, one line per rate.
void PrintSweep(const std::vector<std::pair<std::string, LoadSummary>>& sweep, std::ostream& err) {
  err << "footprint: sweep (target qps: achieved qps, p99 latency, validity):\n";
  for (const auto& [qps, s] : sweep) {
    auto p99 = s.latency_s.find("p99");
    err << "footprint:   " << qps << ": " << FormatValue("count", s.qps) << " qps, p99 "
        << (p99 == s.latency_s.end() ? "-" : FormatDuration(p99->second))
        << (s.validity.empty() ? "" : ", " + s.validity) << "\n";
  }
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

}  // namespace

Action AddLoad(CLI::App& app, const std::vector<std::string>& command) {
  struct LoadArgs {
    RunArgs run;
    std::string scenario = "single", duration = "10s", latency_bound, timeout = "60s", qps;
    LoadOptions load;
  };
  auto args = std::make_shared<LoadArgs>();
  CLI::App* cmd = app.add_subcommand(
      "load",
      "Drive COMMAND, a system under test, with an MLPerf-style load scenario through its "
      "stdin and stdout, and measure it: each query's latency from its scheduled time, the "
      "percentiles, and everything footprint run measures.");
  AddMeasureOptions(cmd, &args->run);
  cmd->add_option("--scenario", args->scenario,
                  "single (one query at a time; p90), multi (N samples per query, one at a "
                  "time; p99), server (Poisson arrivals at --qps; p99) or offline (all queries "
                  "at once; samples/s)")
      ->option_text("NAME");
  cmd->add_option("--qps", args->qps,
                  "server: the target rate, queries per second; several, comma-separated, "
                  "make a sweep: one run each (with --param qps=R) and a throughput-latency "
                  "table at the end")
      ->option_text("R[,R...]");
  cmd->add_option("--samples-per-query", args->load.samples_per_query,
                  "multi: samples in each query (default 8)")
      ->option_text("N");
  cmd->add_option("--duration", args->duration,
                  "issue queries at least this long (default 10s; MLPerf's rules: 600s)")
      ->option_text("D");
  cmd->add_option("--min-queries", args->load.min_queries,
                  "and at least this many (default 100; offline: exactly this many)")
      ->option_text("K");
  cmd->add_option("--latency-bound", args->latency_bound,
                  "the latency the scenario's percentile must stay within (e.g. 50ms)")
      ->option_text("L");
  cmd->add_option("--seed", args->load.seed, "seed of the server's arrivals (default 1)")
      ->option_text("S");
  cmd->add_option("--query-timeout", args->timeout,
                  "a query unanswered this long ends the load (default 60s)")
      ->option_text("T");
  cmd->add_option("--http", args->load.http_url,
                  "COMMAND runs an HTTP server: each query is a POST to URL (on this machine), "
                  "instead of a line on COMMAND's stdin; streamed answers give the time to "
                  "first token and per output token")
      ->option_text("URL");
  cmd->add_option("--body", args->load.http_body,
                  "with --http: each POST's body, {id} and {samples} replaced by the query's "
                  "(default '{\"id\": {id}, \"samples\": [{samples}]}')")
      ->option_text("TEMPLATE");
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
      "normal end). See docs/evaluation.md.\n\n"
      "footprint exits with the command's status, and with 125 when footprint itself fails "
      "(2 for bad options).\n\n"
      "Examples:\n"
      "  footprint load --scenario single --duration 30s -- python3 sut.py\n"
      "  footprint load --scenario server --qps 50 --latency-bound 100ms -- ./server\n"
      "  footprint load --scenario offline --min-queries 2048 -- python3 sut.py --batch 64\n"
      "  footprint load --scenario server --qps 5 --http http://127.0.0.1:8000/generate \\\n"
      "      --body '{\"prompt\": \"query {id}\", \"stream\": true}' -- ./llm-server --port 8000");
  return [args, cmd, &command]() -> int {
    Result<int> status = [&]() -> Result<int> {
      LoadOptions& load = args->load;
      FP_ASSIGN_OR_RETURN(load.scenario, ParseScenario(args->scenario));
      auto duration = [](const char* option, const std::string& text) -> Result<int64_t> {
        auto ns = ParseDurationNs(text);
        if (!ns.ok()) return InvalidArgument(std::string(option) + ": " + ns.status().message());
        return ns;
      };
      FP_ASSIGN_OR_RETURN(load.min_duration_ns, duration("--duration", args->duration));
      FP_ASSIGN_OR_RETURN(load.query_timeout_ns, duration("--query-timeout", args->timeout));
      if (!args->latency_bound.empty()) {
        FP_ASSIGN_OR_RETURN(int64_t bound_ns, duration("--latency-bound", args->latency_bound));
        load.latency_bound_s = static_cast<double>(bound_ns) / 1e9;
      }
      std::vector<std::pair<std::string, double>> rates = {{"", 0.0}};
      if (!args->qps.empty()) {
        FP_ASSIGN_OR_RETURN(rates, QpsValues(args->qps));
      }
      load.qps = rates.front().second;
      FP_RETURN_IF_ERROR(ValidateLoadOptions(load));
      FP_ASSIGN_OR_RETURN(MonitorOptions o, CommandOptions(args->run, *cmd, command));
      FP_ASSIGN_OR_RETURN(auto store, OpenStore(args->run.db));
      int first_failure = 0;
      std::vector<std::pair<std::string, LoadSummary>> sweep;
      for (const auto& [text, qps] : rates) {
        load.qps = qps;
        MonitorOptions each = o;
        if (rates.size() > 1) each.params["qps"] = text;
        FP_ASSIGN_OR_RETURN(auto outcome, RunLoad(*store, each, load, args->run.quiet));
        if (first_failure == 0) first_failure = outcome.first;
        sweep.emplace_back(text, std::move(outcome.second));
      }
      if (sweep.size() > 1 && !args->run.quiet) PrintSweep(sweep, std::cerr);
      return first_failure;
    }();
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
  struct EvaluateArgs {
    RunArgs run;
    std::string manifest, python = "python3";
    bool dry_run = false;
  };
  auto args = std::make_shared<EvaluateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "evaluate",
      "Evaluate a model as a manifest pins it (model, framework, inputs, batch sizes, load "
      "scenarios, trace levels): one footprint load run of the PyTorch agent per scenario, "
      "batch size and rate, each stored with the manifest and the framework it ran on.");
  cmd->add_option("MANIFEST", args->manifest, "the manifest (YAML; docs/evaluation.md)")
      ->required();
  AddDbOption(*cmd, args->run.db);
  cmd->add_option("--python", args->python,
                  "the interpreter of the agent, unless the manifest's framework.python names "
                  "one (default python3)")
      ->option_text("PATH");
  cmd->add_flag("--dry-run", args->dry_run, "print the runs and their commands; run nothing");
  cmd->add_flag("--no-cgroup", args->run.no_cgroup,
                "do not put the agent in a cgroup of its own (totals then come from wait4)");
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
    Result<int> outcome = [&]() -> Result<int> {
      FP_ASSIGN_OR_RETURN(EvaluationManifest m, LoadManifest(args->manifest));
      FP_RETURN_IF_ERROR(CheckModelFile(m));
      const std::string python = m.python.empty() ? args->python : m.python;
      const std::vector<EvaluationRun> runs = PlanEvaluation(m, python);
      if (args->dry_run) {
        for (const EvaluationRun& r : runs) {
          std::cout << r.name << ": " << ShellCommandLine(r.command) << "\n";
        }
        return kExitOk;
      }
      FP_ASSIGN_OR_RETURN(std::string framework, DescribeFramework(m, python));
      FP_ASSIGN_OR_RETURN(auto store, OpenStore(args->run.db));
      std::vector<LoadSummary> summaries;
      int status = kExitOk;
      for (const EvaluationRun& r : runs) {
        MonitorOptions o;
        o.command = r.command;
        o.name = r.name;
        o.params = r.params;
        o.tags = {{"evaluation", m.name}};
        o.use_cgroup = !args->run.no_cgroup;
        o.record_git = !args->run.no_git;
        // Without the system level, the series are sampled once a second: the totals and
        // peaks stay exact (they come from the kernel's accounts).
        if (m.trace.count("system") == 0) o.interval_ns = 1'000'000'000;
        o.extra_meta_json = EvaluationMeta(m, framework, r);
        FP_ASSIGN_OR_RETURN(auto done, RunLoad(*store, o, r.load, args->run.quiet));
        if (done.first != 0) status = kExitError;
        summaries.push_back(std::move(done.second));
      }
      PrintEvaluation(runs, summaries, std::cerr);
      return status;
    }();
    return outcome.ok() ? *outcome : FailOnInputs(outcome.status(), kExitRunFailed);
  };
}

}  // namespace footprint::cli
