// footprint run: measure a command into the database, once, as a group of repetitions, or
// over a parameter scan; the options every measuring subcommand shares (run_options.h).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/cli.h"
#include "cli/format.h"
#include "cli/progress.h"
#include "cli/run_container.h"
#include "cli/run_options.h"
#include "footprint/compare.h"
#include "footprint/monitor.h"
#include "footprint/profiler.h"
#include "footprint/scan.h"
#include "footprint/stats.h"
#include "run/run_metadata.h"
#include "util/strings.h"

namespace footprint::cli {
namespace {

// Refuses a value that looks like an option: option parsing gives an option the next word,
// whatever it is, so that "--gpus --http 1" would measure a GPU named "--http". A negative
// number ("-1") stays a value.
CLI::Validator NotAnOption() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (value.size() < 2 || value[0] != '-' ||
            std::isdigit(static_cast<unsigned char>(value[1]))) {
          return "";
        }
        return "expects a value, but " + QuotedInert(value) +
               " is an option; write the value right after it";
      },
      "");
}

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

// The options of every run, from the command line; `words` is the command.
Result<MonitorOptions> RunOptions(const RunArgs& args, const CLI::App& cmd,
                                  std::vector<std::string> words) {
  if (!args.shell.empty() && args.no_shell) {
    return InvalidArgument("--shell SHELL and -N (no shell) exclude each other");
  }
  if (args.ranges.size() % 3 != 0 || args.lists.size() % 2 != 0) {  // they took its words
    return InvalidArgument(
        "-P takes NAME MIN MAX and -L NAME VALUES, and the command comes after --: "
        "footprint run -P n 1 4 -- CMD {n}");
  }
  MonitorOptions o;
  o.command = std::move(words);
  if (!o.command.empty() && o.command[0].size() > 1 && o.command[0][0] == '-') {
    // Option parsing stops at the first word it does not know: a misspelt option lands
    // here and must not be run as a command.
    return InvalidArgument("unknown option '" + o.command[0] +
                           "' (put the command after --); see footprint run --help");
  }
  if (!args.shell.empty() && !o.command.empty()) {  // hyperfine's way: one line for the shell
    std::string line;
    for (const std::string& w : o.command) line += (line.empty() ? "" : " ") + w;
    o.command = {args.shell, "-c", line};
    // Named after its first program ("sort big.txt | uniq" is sort), not after the shell.
    auto programs = SplitShellWords(line);
    if (args.name.empty() && programs.ok() && !programs->empty()) {
      o.name = DefaultRunName(*programs);
    }
  }
  o.output = args.output;
  o.use_cgroup = !args.no_cgroup;
  o.cpu_sampler = args.cpu_sampler == "ring"    ? MonitorOptions::CpuSampler::kRing
                  : args.cpu_sampler == "timer" ? MonitorOptions::CpuSampler::kTimer
                                                : MonitorOptions::CpuSampler::kAuto;
  o.keep_running = args.keep_running;
  o.record_git = !args.no_git;
  FP_RETURN_IF_ERROR(ApplySamplingOptions(args, cmd, o));
  FP_RETURN_IF_ERROR(ValidateMonitorOptions(o));
  return o;
}

// The scan's combinations of parameter values (one empty combination without -P or -L), the
// parameters in the order given, each checked to appear as {NAME} in what the runs use.
Result<std::vector<std::map<std::string, std::string>>> Scan(const RunArgs& args,
                                                             const CLI::App& cmd,
                                                             const MonitorOptions& o) {
  std::vector<ScanParameter> parameters;
  size_t range = 0, list = 0;  // the next -P's values in args.ranges, the next -L's in lists
  for (const CLI::Option* option : cmd.parse_order()) {
    if (option->check_name("-P") && range + 2 < args.ranges.size()) {
      FP_ASSIGN_OR_RETURN(ScanParameter p,
                          RangeParameter(args.ranges[range], args.ranges[range + 1],
                                         args.ranges[range + 2], args.step));
      parameters.push_back(std::move(p));
      range += 3;
    } else if (option->check_name("-L") && list + 1 < args.lists.size()) {
      FP_ASSIGN_OR_RETURN(ScanParameter p, ListParameter(args.lists[list], args.lists[list + 1]));
      parameters.push_back(std::move(p));
      list += 2;
    }
  }
  const RunHooks& h = args.repeat.hooks;
  std::string used = o.name + "\n" + h.setup + "\n" + h.prepare + "\n" + h.conclude + "\n" +
                     h.cleanup + "\n" + o.output;
  for (const std::string& word : o.command) used += "\n" + word;
  for (const ScanParameter& p : parameters) {
    if (used.find("{" + p.name + "}") == std::string::npos) {
      return InvalidArgument("parameter " + p.name + ": {" + p.name +
                             "} appears neither in the command nor in -n, --output or a hook");
    }
  }
  return ScanCombinations(parameters);
}

// "threads=4 size=1M": a combination for people, empty for none.
std::string CombinationText(const std::map<std::string, std::string>& values) {
  std::string text;
  for (const auto& [name, value] : values) text += (text.empty() ? "" : " ") + name + "=" + value;
  return text;
}

// The options and hooks of one combination: {NAME} replaced, the values stored as params.
std::pair<MonitorOptions, RepeatOptions> Substituted(
    const MonitorOptions& o, const RepeatOptions& r,
    const std::map<std::string, std::string>& values) {
  std::pair<MonitorOptions, RepeatOptions> out{o, r};
  auto& [mo, ro] = out;
  for (std::string* text : {&mo.name, &mo.output, &ro.hooks.setup, &ro.hooks.prepare,
                            &ro.hooks.conclude, &ro.hooks.cleanup}) {
    *text = SubstituteParameters(*text, values);
  }
  for (std::string& word : mo.command) word = SubstituteParameters(word, values);
  for (const auto& [name, value] : values) mo.params[name] = value;
  return out;
}

// "[threads=4] [2/5, ETA 3.1 s] ": where a run stands in the scan and in its group, and how
// long the rest will take (`eta`, may be empty).
std::string RunLabel(const RunRecord& run, const RepeatOptions& repeat,
                     const std::string& combination, const std::string& eta) {
  std::vector<std::string> parts;
  if (!combination.empty()) parts.push_back(combination);
  if (!run.group_id.empty()) {  // a single run has no place in a group
    parts.push_back(run.repetition < 0
                        ? "warm-up " + std::to_string(run.repetition + repeat.warmups + 1) + "/" +
                              std::to_string(repeat.warmups)
                        : std::to_string(run.repetition) + "/" +
                              std::to_string(repeat.repetitions));
  }
  if (parts.empty()) return "";
  if (!eta.empty()) parts.back() += ", " + eta;
  std::string label;
  for (const std::string& part : parts) label += "[" + part + "] ";
  return label;
}

// hyperfine's warnings on the durations of a group's ok repetitions (in the order they ran):
// a first one far slower than the rest, or some far from the rest.
void WarnOfFarDurations(const std::vector<double>& durations, const std::vector<int>& repetitions,
                        const RepeatOptions& repeat, std::ostream& err) {
  const FarValues far = FindFarValues(durations);
  if (far.first_slow) {
    err << "footprint: warning: the first repetition took " << FormatDuration(durations[0])
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
    err << "footprint: warning: repetition(s) " << which
        << " lie far from the rest (more than 10 robust standard deviations from the "
           "median): the machine was busy, perhaps; measure again on a quiet one, or "
           "compare with --test mann-whitney\n";
  }
}

// Whether the end of the run (its status, end time and totals) could not be stored: the
// monitor (src/run/monitor.cc) and the agent (src/slurm/agent.cc) say so in a warning,
// "the end of ... could not be stored (...)", and go on; the run then shows as interrupted.
bool EndNotStored(const MonitorOutcome& out) { return !out.end_stored; }

// Where a group's runs are, for its last line: "; stored in DB (footprint show group:ID)",
// with those whose end could not be stored counted, or where they were saved instead.
std::string WhereStored(const GroupOutcome& group, Store& store) {
  const std::string id = group.group_id.substr(0, 8);
  const MonitorOutcome* last = group.runs.empty() ? nullptr : &group.runs.back();
  if (last != nullptr && last->database_vanished) {
    if (last->saved_to.empty()) return "";  // the warnings said it is lost
    return "; saved to " + last->saved_to + " (footprint show -o " + last->saved_to +
           " group:" + id + ")";
  }
  const auto unended = std::count_if(group.runs.begin(), group.runs.end(), EndNotStored);
  const std::string waiting = store.WaitingIn();
  std::string where = waiting.empty() ? "; stored in " + store.location()
                                      : "; waiting in buffer at " + waiting + " until " +
                                            store.location() + " takes them";
  if (unended > 0) {
    where +=
        ", " + std::to_string(unended) + " run(s) without their end (they show as interrupted)";
  }
  return where + " (footprint show group:" + id + ")";
}

// The group's last words: how far it got, the mean duration, where to look.
void PrintGroup(const GroupOutcome& group, const RepeatOptions& repeat, Store& store,
                std::ostream& err) {
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
  std::ostringstream line;
  line << "footprint: group " << id << ": " << measured << " of " << repeat.repetitions
       << " repetitions";
  if (repeat.warmups > 0) line << " (after " << repeat.warmups << " warm-up(s))";
  if (!durations.empty()) {
    Description d = Describe(durations);
    line << ", duration " << FormatDuration(d.mean);
    if (d.sd) line << " ± " << FormatDuration(*d.sd);
    line << " over " << d.n << " ok";
  }
  const MonitorOutcome* last = group.runs.empty() ? nullptr : &group.runs.back();
  if (group.signal_received != 0) {
    line << "; stopped by signal " << group.signal_received;
  } else if (last != nullptr && last->database_vanished) {
    line << "; stopped: the database vanished";
  } else if (!group.hook_failure.empty()) {
    line << "; stopped: a hook failed";
  } else if (!group.complete) {
    line << "; stopped after a failing run (--keep-going runs them all)";
  }
  line << WhereStored(group, store);
  PrintLine(err, line.str());
  WarnOfFarDurations(durations, repetitions, repeat, err);
}

// After a scan: each combination against the fastest, hyperfine's way ("'threads=1' ran 2.91 ±
// 0.08 times slower than 'threads=4'"), and how to compare them in full.
Status PrintScanSummary(Store& store, const std::vector<std::string>& combinations,
                        const std::vector<GroupOutcome>& groups, std::ostream& err) {
  FP_ASSIGN_OR_RETURN(auto runs, LoadRuns(store));
  std::vector<SetSummary> sets;
  std::string specs;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].runs.empty()) continue;
    const RunRecord& last = groups[i].runs.back().run;
    const std::string spec = last.group_id.empty() ? last.id : "group:" + last.group_id;
    FP_ASSIGN_OR_RETURN(RunSet set, ResolveRunSet(runs, spec));
    set.spec = combinations[i];
    FP_ASSIGN_OR_RETURN(SetSummary summary, SummarizeSet(store, std::move(set)));
    if (summary.Find("duration_s") == nullptr) continue;  // no run ended well
    sets.push_back(std::move(summary));
    specs +=
        last.group_id.empty() ? " " + last.id.substr(0, 8) : " group:" + last.group_id.substr(0, 8);
  }
  if (sets.size() < 2) return Status::Ok();
  std::stable_sort(sets.begin(), sets.end(), [](const SetSummary& a, const SetSummary& b) {
    return a.Find("duration_s")->stats.mean < b.Find("duration_s")->stats.mean;
  });
  FP_ASSIGN_OR_RETURN(Comparison c, Compare(std::move(sets)));
  const FigureComparison& duration = *std::find_if(
      c.figures.begin(), c.figures.end(), [](const auto& f) { return f.name == "duration_s"; });
  err << "footprint: fastest: " << QuotedInert(c.sets[0].set.spec) << ", "
      << FormatDuration(c.sets[0].Find("duration_s")->stats.mean) << "\n";
  for (size_t i = 1; i < c.sets.size(); ++i) {
    std::string verdict = Verdict(c, duration, i);
    if (verdict.empty() && duration.changes[i] && duration.changes[i]->ratio) {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.2f", *duration.changes[i]->ratio);
      verdict = QuotedInert(c.sets[i].set.spec) + " took " + ratio + " times as long as " +
                QuotedInert(c.sets[0].set.spec) + " (one run each: -r N to test it)";
    }
    if (!verdict.empty()) err << "footprint:   " << verdict << "\n";
  }
  err << "footprint: in full: footprint compare" << specs << "\n";
  return Status::Ok();
}

// Runs every combination of the scan (one without -P/-L), each once or as a group; the exit
// status of the first that failed, else 0.
Result<int> RunScan(Store& store, const RunArgs& args, const MonitorOptions& o,
                    const std::vector<std::map<std::string, std::string>>& scan) {
  const int runs_each = args.repeat.warmups + args.repeat.repetitions;
  const bool live = !args.quiet && !o.output.empty() && ::isatty(STDERR_FILENO) == 1;
  Progress progress(static_cast<int>(scan.size()) * runs_each, live);
  std::vector<GroupOutcome> groups;
  std::vector<std::string> combinations;
  int status = 0;
  for (const auto& values : scan) {
    auto [mo, ro] = Substituted(o, args.repeat, values);
    combinations.push_back(CombinationText(values));
    auto on_run = [&](const MonitorOutcome& out) {
      progress.Done();
      std::ostringstream err;
      if (!out.launch_error.empty()) PrintLine(err, "footprint: " + out.launch_error);
      for (const std::string& w : out.warnings) PrintLine(err, "footprint: warning: " + w);
      if (!args.quiet) {
        PrintOutcome(out, store,
                     RunLabel(out.run, ro, combinations.back(), live ? "" : progress.Eta()), err);
      }
      progress.Print(err.str());
    };
    FP_ASSIGN_OR_RETURN(GroupOutcome group, RunRepeated(store, mo, ro, on_run));
    std::ostringstream err;
    if (!group.hook_failure.empty()) PrintLine(err, "footprint: " + group.hook_failure);
    if (!group.group_id.empty() && (!args.quiet || !group.complete)) {
      PrintGroup(group, ro, store, err);
    }
    progress.Print(err.str());
    const MonitorOutcome* last = group.runs.empty() ? nullptr : &group.runs.back();
    // A run stored nowhere is footprint's failure, whatever the command did.
    if (last && last->database_vanished && last->saved_to.empty()) return kExitRunFailed;
    if (status == 0) status = group.exit_status;
    const bool stop = group.signal_received != 0 || (last && last->database_vanished) ||
                      (group.exit_status != 0 && !args.repeat.keep_going);
    groups.push_back(std::move(group));
    if (stop) break;
  }
  if (scan.size() > 1 && !args.quiet) {
    std::ostringstream err;
    FP_RETURN_IF_ERROR(PrintScanSummary(store, combinations, groups, err));
    progress.Print(err.str());
  }
  return status;
}

void AddScanAndHookOptions(CLI::App& cmd, RunArgs& args) {
  cmd.add_option("-P,--parameter-scan", args.ranges,
                 "run once (or -r N times) per value of NAME from MIN to MAX, written {NAME} in "
                 "the command, -n, --output or a hook; repeatable, with -L too: every "
                 "combination runs, the first parameter varying slowest")
      ->type_size(-3)
      ->option_text("NAME MIN MAX");
  cmd.add_option("-D,--parameter-step-size", args.step,
                 "the step of every -P range (default 1; decimals allowed)")
      ->option_text("STEP");
  cmd.add_option("-L,--parameter-list", args.lists,
                 "like -P, over the comma-separated VALUES (e.g. -L compiler gcc,clang)")
      ->type_size(-2)
      ->option_text("NAME VALUES");
  const std::pair<const char*, std::string RunHooks::*> hooks[] = {
      {"--setup", &RunHooks::setup},
      {"--prepare", &RunHooks::prepare},
      {"--conclude", &RunHooks::conclude},
      {"--cleanup", &RunHooks::cleanup}};
  const char* what[] = {"once before the first run (warm-ups included)", "before each run",
                        "after each run", "once after the last run, also after a failure"};
  for (size_t i = 0; i < std::size(hooks); ++i) {
    cmd.add_option(hooks[i].first, args.repeat.hooks.*hooks[i].second,
                   std::string("a command line to run ") + what[i] +
                       ", not measured; a failure stops the runs")
        ->option_text("CMD");
  }
  cmd.add_option("--shell", args.shell,
                 "run the hooks and the command by SHELL -c (default: the hooks by sh, the "
                 "command without a shell)")
      ->check(NotAnOption())
      ->option_text("SHELL");
  cmd.add_flag("-N,--no-shell", args.no_shell,
               "run the hooks without a shell too (their words split as a shell would)");
  cmd.add_option("--output", args.output,
                 "where the command's stdout and stderr go: a file (appended to; /dev/null to "
                 "discard them, as hyperfine does; default: footprint's own). With -r on a "
                 "terminal, a progress bar is drawn then")
      ->check(NotAnOption())
      ->option_text("FILE");
}

// --profiler, --profile and --require-profiler (docs/profiling.md).
void AddProfilerOptions(CLI::App& cmd, RunArgs& args) {
  cmd.add_option("--profiler", args.profiler,
                 "start the command inside a profiler as radT's listener of that name does: "
                 "nsys, nsysraw (Nsight Systems), ncu, ncuraw, ncuattach (Nsight Compute); "
                 "its traces become the run's artifacts, its cost is stored apart")
      ->check(CLI::IsMember(ProfilerListeners(), CLI::ignore_case))
      ->option_text("LISTENER");
  cmd.add_option("--profile", args.profile,
                 "torch:STEPS[:WAIT]: profile STEPS optimizer steps of a PyTorch script with "
                 "torch.profiler, after WAIT steps (default 5) and 1 of warm-up, with no change "
                 "to the script; the trace becomes the run's artifact (docs/profiling.md)")
      ->option_text("torch:STEPS");
  cmd.add_flag("--require-profiler", args.require_profiler,
               "refuse the run when the profiler's tool is not on PATH (default: one line, and "
               "the command runs unprofiled)");
}

}  // namespace

Result<std::unique_ptr<HookFolder>> HookFolder::Make() {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/footprint-profile-XXXXXX";
  if (::mkdtemp(path.data()) == nullptr) {
    return IoError("cannot create a folder for --profile in " + DirName(path) + ": " +
                   std::strerror(errno));
  }
  return std::unique_ptr<HookFolder>(new HookFolder(std::move(path)));
}

HookFolder::~HookFolder() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void PrintOutcome(const MonitorOutcome& out, Store& store, const std::string& label,
                  std::ostream& err) {
  const std::string& db = store.location();
  auto total = [&](const char* name) {
    auto it = out.totals.find(name);
    return it == out.totals.end() ? 0.0 : it->second;
  };
  std::ostringstream line;
  line << "footprint: " << label << out.run.name << " " << RunStatusText(out.run) << " in "
       << FormatDuration(total("duration_s")) << ": cpu " << FormatDuration(total("cpu_user_s"))
       << " user + " << FormatDuration(total("cpu_system_s")) << " system, peak memory "
       << FormatBytes(total("peak_memory_bytes"));
  if (out.totals.contains("io_read_bytes")) {
    line << ", io " << FormatBytes(total("io_read_bytes")) << " read / "
         << FormatBytes(total("io_write_bytes")) << " written";
  }
  PrintLine(err, line.str());
  // A group's runs: its last line says where; a vanished database: the warnings do.
  if (!out.run.group_id.empty() || out.database_vanished) return;
  const std::string id = out.run.id.substr(0, 8);
  if (EndNotStored(out)) {
    PrintLine(err, "footprint: run " + id + " is in " + db +
                       " without its end (the warning says why): it shows as interrupted "
                       "(footprint show " +
                       id + ")");
  } else if (const std::string waiting = store.WaitingIn(); !waiting.empty()) {
    PrintLine(err, "footprint: run " + id + " waiting in buffer at " + waiting + " until " + db +
                       " takes it (footprint show " + id + " once it has)");
  } else {
    PrintLine(err, "footprint: run " + id + " stored in " + db + " (footprint show " + id + ")");
  }
}

Status ApplySamplingOptions(const RunArgs& args, const CLI::App& cmd, MonitorOptions& o) {
  if (!args.name.empty()) o.name = args.name;
  o.description = args.description;
  if (cmd.count("--gpus") > 0) o.gpus = args.gpus;
  FP_RETURN_IF_ERROR(ApplyKeyValues(args.tags, "--tag", o.tags));
  FP_RETURN_IF_ERROR(ApplyKeyValues(args.params, "--param", o.params));
  FP_RETURN_IF_ERROR(ApplyIntervals(args.intervals, o));
  if (cmd.count("--metrics") > 0) {
    FP_ASSIGN_OR_RETURN(o.metrics, ParseMetricList(args.metrics));
  }
  return Status::Ok();
}

void AddSamplingOptions(CLI::App* cmd, RunArgs* args) {
  AddDbOption(*cmd, args->db);
  // Set as the variable, so that the Python API inside the command buffers there too.
  cmd->add_option_function<std::string>(
         "--buffer-dir",
         [](const std::string& dir) { ::setenv("FOOTPRINT_BUFFER_DIR", dir.c_str(), 1); },
         "folder of the local buffer a postgresql:// database is written through (default: "
         "$FOOTPRINT_BUFFER_DIR, else ~/.local/state/footprint/buffers); on shared storage, "
         "`footprint push --dir` from any node sends what a lost node left")
      ->option_text("DIR");
  cmd->add_option("-n,--name", args->name,
                  "run name (default: the command's base name; for an interpreter, the "
                  "script's: python3 train.py is named train.py)")
      ->check(NotAnOption());
  cmd->add_option("-d,--description", args->description, "free-text description");
  cmd->add_option("--tag", args->tags, "KEY=VALUE label, repeatable");
  cmd->add_option("--param", args->params, "KEY=VALUE parameter of the run, repeatable");
  cmd->add_option("-m,--metrics", args->metrics,
                  "comma-separated metrics to sample: names, prefixes such as gpu* or perf.*, "
                  "default (all but the opt-in energy.* and perf.*) or all; see docs/metrics.md")
      ->check(NotAnOption());
  cmd->add_option("-i,--interval", args->intervals,
                  "sampling interval for all metrics (e.g. 10ms; default 100ms; at least 1ms), "
                  "or METRIC=INTERVAL for one metric; repeatable")
      ->check(NotAnOption());
  cmd->add_option("--gpus", args->gpus,
                  "GPUs to measure, listed as CUDA_VISIBLE_DEVICES lists them (indices, GPU-/MIG- "
                  "UUIDs) or 'all'; default: those CUDA_VISIBLE_DEVICES allows, else all. The "
                  "command's environment is not changed")
      ->check(NotAnOption());
  cmd->add_flag("-q,--quiet", args->quiet, "print no summary when the command ends");
}

void AddMeasureOptions(CLI::App* cmd, RunArgs* args) {
  AddSamplingOptions(cmd, args);
  cmd->add_flag("--no-cgroup", args->no_cgroup,
                "do not put the command in a cgroup of its own (totals then come from wait4)");
  cmd->add_flag("--no-git", args->no_git, "do not record the git commit of the current folder");
  cmd->add_option("--cpu-sampler", args->cpu_sampler,
                  "how the tree's cpu is sampled: 'ring', by the kernel into a ring buffer "
                  "that footprint drains 4 times a second (perf events on the run's cgroup: "
                  "root or CAP_PERFMON); 'timer', cpu.stat read at each interval; 'auto' "
                  "(default), the ring for intervals under 10ms where the kernel allows it. "
                  "footprint doctor says which")
      ->check(CLI::IsMember({"auto", "ring", "timer"}))
      ->option_text("auto|ring|timer");
  cmd->add_flag("--keep-running", args->keep_running,
                "if footprint itself is killed, leave the command running (default: it is "
                "stopped with every process it started, the cgroup's; without a cgroup, the "
                "command's own process only)");
}

Result<MonitorOptions> CommandOptions(RunArgs& args, CLI::App& cmd,
                                      const std::vector<std::string>& command) {
  std::vector<std::string> words = cmd.remaining();  // without "--": from the first word
  words.insert(words.end(), command.begin(), command.end());
  if (args.no_shell) args.repeat.hooks.shell.clear();
  if (!args.shell.empty()) args.repeat.hooks.shell = args.shell;
  return RunOptions(args, cmd, std::move(words));
}

namespace {

// footprint run once its options are parsed (not --container or --duration): the command,
// or its repetitions and combinations, measured into the database.
Result<int> MeasureCommandLine(RunArgs& args, CLI::App& cmd,
                               const std::vector<std::string>& command) {
  FP_ASSIGN_OR_RETURN(MonitorOptions o, CommandOptions(args, cmd, command));
  if (!args.profiler.empty()) {
    o.profiler = ProfilerRequest{.listener = args.profiler, .required = args.require_profiler};
    FP_RETURN_IF_ERROR(ValidateMonitorOptions(o));
  }
  std::unique_ptr<HookFolder> hook;
  if (!args.profile.empty()) {
    FP_ASSIGN_OR_RETURN(hook, HookFolder::Make());
    FP_RETURN_IF_ERROR(AddTorchWindow(args.profile, hook->path(), *o.env, o.environment));
  }
  FP_ASSIGN_OR_RETURN(auto scan, Scan(args, cmd, o));
  FP_ASSIGN_OR_RETURN(auto store, OpenStore(args.db));
  return RunScan(*store, args, o, scan);
}

}  // namespace

Action AddRun(CLI::App& app, const std::vector<std::string>& command) {
  auto args = std::make_shared<RunArgs>();
  auto attach = std::make_shared<AttachArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run COMMAND and measure it and every process it starts into the database.");
  AddMeasureOptions(cmd, args.get());
  cmd->add_option("-r,--repetitions", args->repeat.repetitions,
                  "run the command N times as one group, for statistics (default 1)")
      ->check(CLI::Range(int64_t{1}, kMaxRepetitions))
      ->option_text("N");
  cmd->add_option("--warmup", args->repeat.warmups,
                  "runs before the repetitions, stored as warm-ups and left out of statistics")
      ->check(CLI::Range(int64_t{0}, kMaxRepetitions))
      ->option_text("N");
  cmd->add_flag("--keep-going", args->repeat.keep_going,
                "with -r or a scan: run every repetition and combination even after one fails");
  AddScanAndHookOptions(*cmd, *args);
  AddProfilerOptions(*cmd, *args);
  AddContainerOptions(*cmd, *attach);
  cmd->prefix_command();
  cmd->footer(
      "COMMAND is everything after --: footprint run [OPTIONS] -- COMMAND [ARGS...]\n\n"
      "footprint exits with the command's status (128+N if a signal N killed it, 127 if it was "
      "not found, 126 if it could not be executed) and with 125 when footprint itself fails. "
      "stdin, stdout and stderr are the command's; footprint's summary goes to stderr.\n\n"
      "With -r N (and --warmup W), the runs form a group (footprint show group:ID); footprint "
      "stops after the first run that fails (unless --keep-going) and exits with its status, "
      "or 0 when all succeeded; Ctrl-C stops the group after storing the run it interrupted. "
      "A hook that fails stops the runs too, and footprint exits with its status.\n\n"
      "With -P or -L, each combination of values is a group of its own (or a run, without "
      "-r), its values stored as --param NAME=VALUE; at the end, each is compared with the "
      "fastest.\n\n"
      "Examples:\n"
      "  footprint run -- python3 train.py --epochs 3\n"
      "  footprint run -n sort -i 10ms --interval memory=1ms -- sort data.txt -o /dev/null\n"
      "  footprint run -r 10 --warmup 2 -- ./bench --size 1M\n"
      "  footprint run -r 5 -P threads 1 4 --prepare 'sync' -- ./bench --threads {threads}\n"
      "  footprint run -r 5 -L compiler gcc,clang --shell bash -- '{compiler} -O2 x.c'");

  return [args, attach, cmd, &command]() -> int {
    if (cmd->count("--container") + cmd->count("--duration") > 0) {
      return RunAttach(*attach, *args, *cmd, command);
    }
    Result<int> status = MeasureCommandLine(*args, *cmd, command);
    if (status.ok()) return *status;
    Fail(status.status());  // footprint's own failure: 125, whatever its kind (see --help)
    return kExitRunFailed;
  };
}

}  // namespace footprint::cli
