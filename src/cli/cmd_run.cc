// footprint run: measure a command into the database.
#include <iostream>
#include <memory>

#include "cli/cli.h"
#include "cli/format.h"
#include "footprint/monitor.h"
#include "footprint/stats.h"
#include "util/strings.h"

namespace footprint::cli {
namespace {

struct RunArgs {
  std::string db;
  std::string name, description, metrics, gpus;
  std::vector<std::string> tags, params, intervals;
  bool no_cgroup = false, no_git = false, quiet = false;
  RepeatOptions repeat;
};

// -i/--interval takes INTERVAL (the default for every metric) or METRIC=INTERVAL.
Status ApplyIntervals(const std::vector<std::string>& items, MonitorOptions& o) {
  for (const std::string& item : items) {
    size_t eq = item.find('=');
    std::string_view text = eq == std::string::npos ? item : std::string_view(item).substr(eq + 1);
    Result<int64_t> ns = ParseDurationNs(text);
    if (!ns.ok()) return InvalidArgument("--interval " + item + ": " + ns.status().message());
    if (eq == std::string::npos) {
      o.interval_ns = *ns;
      continue;
    }
    Result<MetricId> metric = MetricByName(Trim(std::string_view(item).substr(0, eq)));
    if (!metric.ok())
      return InvalidArgument("--interval " + item + ": " + metric.status().message());
    o.metric_interval_ns[*metric] = *ns;
  }
  return Status::Ok();
}

Status ApplyKeyValues(const std::vector<std::string>& items, std::string_view flag,
                      std::map<std::string, std::string>& out) {
  for (const std::string& item : items) {
    FP_ASSIGN_OR_RETURN(auto kv, ParseKeyValue(item, flag));
    out[kv.first] = kv.second;
  }
  return Status::Ok();
}

// `label` tells which run of a group it was ("[2/5] ", "[warm-up 1/1] "), empty otherwise.
void PrintOutcome(const MonitorOutcome& out, const std::string& db, const std::string& label) {
  auto total = [&](const char* name) {
    auto it = out.totals.find(name);
    return it == out.totals.end() ? 0.0 : it->second;
  };
  const std::string status = RunStatusText(out.run);
  std::cerr << "footprint: " << label << Inert(out.run.name) << " " << status << " in "
            << FormatDuration(total("duration_s")) << ": cpu "
            << FormatDuration(total("cpu_user_s")) << " user + "
            << FormatDuration(total("cpu_system_s")) << " system, peak memory "
            << FormatBytes(total("peak_memory_bytes")) << ", io "
            << FormatBytes(total("io_read_bytes")) << " read / "
            << FormatBytes(total("io_write_bytes")) << " written\n";
  if (label.empty() && !out.database_vanished) {  // else the warnings said where it went
    std::cerr << "footprint: run " << out.run.id.substr(0, 8) << " stored in " << db
              << " (footprint show " << out.run.id.substr(0, 8) << ")\n";
  }
}

std::string RepetitionLabel(const RunRecord& run, const RepeatOptions& repeat) {
  if (run.repetition < 0) {
    return "[warm-up " + std::to_string(run.repetition + repeat.warmups + 1) + "/" +
           std::to_string(repeat.warmups) + "] ";
  }
  return "[" + std::to_string(run.repetition) + "/" + std::to_string(repeat.repetitions) + "] ";
}

// hyperfine's warnings on the durations of a group's ok repetitions (in the order they ran):
// a first one far slower than the rest, or some far from the rest.
void WarnOfFarDurations(const std::vector<double>& durations, const std::vector<int>& repetitions,
                        const RepeatOptions& repeat) {
  const FarValues far = FindFarValues(durations);
  if (far.first_slow) {
    std::cerr << "footprint: warning: the first repetition took " << FormatDuration(durations[0])
              << ", far longer than the rest (median " << FormatDuration(Describe(durations).median)
              << "): caches filled by that run, perhaps; "
              << (repeat.warmups > 0 ? "more --warmup runs, or a quieter machine, may help"
                                     : "--warmup N runs the command N times before measuring")
              << "\n";
  } else if (!far.far.empty()) {
    std::string which;
    for (size_t i : far.far) {
      which += (which.empty() ? "#" : ", #") + std::to_string(repetitions[i]) + " (" +
               FormatDuration(durations[i]) + ")";
    }
    std::cerr << "footprint: warning: repetition(s) " << which
              << " lie far from the rest (more than 10 robust standard deviations from the "
                 "median): the machine was busy, perhaps; measure again on a quiet one, or "
                 "compare with --test mann-whitney\n";
  }
}

// The group's last words on stderr: how far it got, the mean duration, where to look.
void PrintGroup(const GroupOutcome& group, const RepeatOptions& repeat, const std::string& db) {
  std::vector<double> durations;
  std::vector<int> repetitions;
  int measured = 0;
  for (const MonitorOutcome& o : group.runs) {
    if (o.run.repetition < 0) continue;
    ++measured;
    auto it = o.totals.find("duration_s");
    if (o.run.status == RunStatus::kOk && it != o.totals.end()) {
      durations.push_back(it->second);
      repetitions.push_back(o.run.repetition);
    }
  }
  const std::string id = group.group_id.substr(0, 8);
  std::cerr << "footprint: group " << id << ": " << measured << " of " << repeat.repetitions
            << " repetitions";
  if (repeat.warmups > 0) std::cerr << " (after " << repeat.warmups << " warm-up(s))";
  if (!durations.empty()) {
    Description d = Describe(durations);
    std::cerr << ", duration " << FormatDuration(d.mean);
    if (d.sd) std::cerr << " ± " << FormatDuration(*d.sd);
    std::cerr << " over " << d.n << " ok";
  }
  const MonitorOutcome* last = group.runs.empty() ? nullptr : &group.runs.back();
  if (group.signal_received != 0) {
    std::cerr << "; stopped by signal " << group.signal_received;
  } else if (last != nullptr && last->database_vanished) {
    std::cerr << "; stopped: the database vanished";
  } else if (!group.complete) {
    std::cerr << "; stopped after a failing run (--keep-going runs them all)";
  }
  if (last == nullptr || !last->database_vanished) {
    std::cerr << "; stored in " << db << " (footprint show group:" << id << ")";
  } else if (!last->saved_to.empty()) {
    std::cerr << "; saved to " << last->saved_to << " (footprint show -o " << last->saved_to
              << " group:" << id << ")";
  }
  std::cerr << "\n";
  WarnOfFarDurations(durations, repetitions, repeat);
}

}  // namespace

Action AddRun(CLI::App& app, const std::vector<std::string>& command) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run COMMAND and measure it and every process it starts into the database.");
  AddDbOption(*cmd, args->db);
  cmd->add_option("-n,--name", args->name,
                  "run name (default: the command's base name; for an interpreter, the "
                  "script's: python3 train.py is named train.py)");
  cmd->add_option("-d,--description", args->description, "free-text description");
  cmd->add_option("--tag", args->tags, "KEY=VALUE label, repeatable");
  cmd->add_option("--param", args->params, "KEY=VALUE parameter of the run, repeatable");
  cmd->add_option("-m,--metrics", args->metrics,
                  "comma-separated metrics to sample: names, prefixes such as gpu* or perf.*, "
                  "default (all but the opt-in energy.* and perf.*) or all; see docs/metrics.md");
  cmd->add_option("-i,--interval", args->intervals,
                  "sampling interval for all metrics (e.g. 10ms; default 100ms; at least 1ms), "
                  "or METRIC=INTERVAL for one metric; repeatable");
  cmd->add_option("--gpus", args->gpus,
                  "GPUs to measure, listed as CUDA_VISIBLE_DEVICES lists them (indices, GPU-/MIG- "
                  "UUIDs) or 'all'; default: those CUDA_VISIBLE_DEVICES allows, else all. The "
                  "command's environment is not changed");
  cmd->add_flag("--no-cgroup", args->no_cgroup,
                "do not put the command in a cgroup of its own (totals then come from wait4)");
  cmd->add_flag("--no-git", args->no_git, "do not record the git commit of the current folder");
  cmd->add_flag("-q,--quiet", args->quiet, "print no summary when the command ends");
  cmd->add_option("-r,--repetitions", args->repeat.repetitions,
                  "run the command N times as one group, for statistics (default 1)")
      ->check(CLI::Range(int64_t{1}, kMaxRepetitions))
      ->option_text("N");
  cmd->add_option("--warmup", args->repeat.warmups,
                  "runs before the repetitions, stored as warm-ups and left out of statistics")
      ->check(CLI::Range(int64_t{0}, kMaxRepetitions))
      ->option_text("N");
  cmd->add_flag("--keep-going", args->repeat.keep_going,
                "with -r: run every repetition even after one fails");
  cmd->prefix_command();
  cmd->footer(
      "COMMAND is everything after --: footprint run [OPTIONS] -- COMMAND [ARGS...]\n\n"
      "footprint exits with the command's status (128+N if a signal N killed it, 127 if it was "
      "not found, 126 if it could not be executed) and with 125 when footprint itself fails. "
      "stdin, stdout and stderr are the command's; footprint's summary goes to stderr.\n\n"
      "With -r N (and --warmup W), the runs form a group (footprint show group:ID); footprint "
      "stops after the first run that fails (unless --keep-going) and exits with its status, "
      "or 0 when all succeeded; Ctrl-C stops the group after storing the run it interrupted.\n\n"
      "Examples:\n"
      "  footprint run -- python3 train.py --epochs 3\n"
      "  footprint run -n sort -i 10ms --interval memory=1ms -- sort data.txt -o /dev/null\n"
      "  footprint run -r 10 --warmup 2 -- ./bench --size 1M");

  return [args, cmd, &command]() -> int {
    MonitorOptions o;
    o.command = cmd->remaining();  // a command given without "--" starts at the first word
    if (!o.command.empty() && o.command[0].size() > 1 && o.command[0][0] == '-') {
      // Option parsing stops at the first word it does not know: a misspelt option lands
      // here and must not be run as a command.
      Fail(InvalidArgument("unknown option '" + o.command[0] +
                           "' (put the command after --); see footprint run --help"));
      return kExitRunFailed;
    }
    o.command.insert(o.command.end(), command.begin(), command.end());
    o.name = args->name;
    o.description = args->description;
    o.use_cgroup = !args->no_cgroup;
    o.record_git = !args->no_git;
    if (cmd->count("--gpus") > 0) o.gpus = args->gpus;
    Status st = ApplyKeyValues(args->tags, "--tag", o.tags);
    if (st.ok()) st = ApplyKeyValues(args->params, "--param", o.params);
    if (st.ok()) st = ApplyIntervals(args->intervals, o);
    if (st.ok() && cmd->count("--metrics") > 0) {
      auto set = ParseMetricList(args->metrics);
      if (set.ok()) {
        o.metrics = *set;
      } else {
        st = set.status();
      }
    }
    if (st.ok()) st = ValidateMonitorOptions(o);
    if (!st.ok()) {
      Fail(st);
      return kExitRunFailed;
    }
    auto store = OpenStore(args->db);
    if (!store.ok()) {
      Fail(store.status());
      return kExitRunFailed;
    }
    const std::string& db = (*store)->location();
    auto report = [&](const MonitorOutcome& out, const std::string& label) {
      if (!out.launch_error.empty()) std::cerr << "footprint: " << out.launch_error << "\n";
      for (const std::string& w : out.warnings) std::cerr << "footprint: warning: " << w << "\n";
      if (!args->quiet) PrintOutcome(out, db, label);
    };
    if (args->repeat.repetitions == 1 && args->repeat.warmups == 0) {
      auto outcome = RunMonitored(**store, o);
      if (!outcome.ok()) {
        Fail(outcome.status());
        return kExitRunFailed;
      }
      report(*outcome, "");
      // A run stored nowhere is footprint's failure, whatever the command did.
      if (outcome->database_vanished && outcome->saved_to.empty()) return kExitRunFailed;
      return outcome->exit_status;
    }
    auto group = RunRepeated(**store, o, args->repeat, [&](const MonitorOutcome& out) {
      report(out, RepetitionLabel(out.run, args->repeat));
    });
    if (!group.ok()) {
      Fail(group.status());
      return kExitRunFailed;
    }
    if (!args->quiet || !group->complete) PrintGroup(*group, args->repeat, db);
    return group->exit_status;
  };
}

}  // namespace footprint::cli
