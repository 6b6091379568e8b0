// footprint runs / footprint show: read runs back.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <variant>

#include "cli/cli.h"
#include "cli/format.h"
#include "cli/load_view.h"
#include "cli/stats_view.h"
#include "footprint/gpu_report.h"
#include "footprint/groups.h"
#include "footprint/mig.h"
#include "footprint/report.h"
#include "run/run_metadata.h"
#include "run/slurm.h"
#include "store/reconcile.h"
#include "util/clock.h"
#include "util/host.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace footprint::cli {

Result<std::unique_ptr<Store>> OpenExisting(const std::string& db) {
  return OpenStore(db, {.read_only = true});
}

Result<std::vector<RunRecord>> LoadRuns(Store& store) {
  return ListReconciledRuns(store, Env::Default());
}

int ExitCodeOf(const std::function<Result<int>()>& body) {
  Result<int> code = body();
  return code.ok() ? *code : Fail(code.status());
}

Action ReadingAction(const std::string& db, ReaderBody body) {
  return [&db, body = std::move(body)]() -> int {
    return ExitCodeOf([&]() -> Result<int> {
      FP_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenExisting(db));
      FP_ASSIGN_OR_RETURN(std::vector<RunRecord> runs, LoadRuns(*store));
      return body(*store, runs);
    });
  };
}

Result<RunSet> ResolveRunSetNoted(const std::vector<RunRecord>& runs, std::string_view spec,
                                  bool as_group) {
  FP_ASSIGN_OR_RETURN(RunSet set, ResolveRunSet(runs, spec, as_group));
  if (!set.chosen.empty()) PrintLine(std::cerr, "footprint: note: " + set.chosen);
  return set;
}

namespace {

using json = nlohmann::json;

// Valued metrics by name: scalars as count/first/last/min/max, documents by kind.
void PrintValues(const RunSummary& s, const Decoration& deco, std::ostream& out) {
  if (s.values.empty()) return;
  out << "\n" << Paint("values", "1", deco.color) << "\n";
  Table t({"name", "count", "first", "last", "min", "max", ""}, {1, 2, 3, 4, 5});
  auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return std::string(buf);
  };
  for (size_t i = 0; i < s.values.size();) {
    size_t j = i;
    std::vector<double> scalars;
    while (j < s.values.size() && s.values[j].name == s.values[i].name) {
      if (s.values[j].value) scalars.push_back(*s.values[j].value);
      ++j;
    }
    const ValueRecord& last = s.values[j - 1];
    std::string note;
    json data = last.data_json.empty() ? json() : json::parse(last.data_json, nullptr, false);
    if (data.is_object() && data.value("kind", "") == "confusion_matrix") {
      size_t n = data["labels"].size();
      note = "confusion matrix " + std::to_string(n) + "x" + std::to_string(n);
    } else if (data.is_object() && data.value("kind", "") == "hyperparameters") {
      note = "hyperparameters -> " + data.value("target", std::string("target"));
    } else if (last.name == "time_to_accuracy" && data.is_object()) {
      note = "seconds until accuracy " + num(data.value("target", 0.0)) +
             (last.step ? " (step " + std::to_string(*last.step) + ")" : "");
    } else if (last.name == "load.latency") {
      note = "per query, from its scheduled time (footprint load); by query id";
    } else if (data.is_object() &&
               (data.value("kind", "") == "sstat" || data.value("kind", "") == "sacct")) {
      const double own = data.value("footprint", 0.0);
      note = data.value("kind", "") + " of step " + data.value("step", std::string()) +
             "; footprint " + FormatValue(last.name.ends_with("_bytes") ? "bytes" : "s", own);
    } else if (data.is_object() && data.contains("unavailable")) {
      note = "not measured: " + data.value("unavailable", std::string());
    } else if (!last.data_json.empty()) {
      note = "JSON document";
    }
    if (scalars.empty()) {
      t.Add({last.name, std::to_string(j - i), "", "", "", "", note});
    } else {
      auto [lo, hi] = std::minmax_element(scalars.begin(), scalars.end());
      t.Add({last.name, std::to_string(j - i), num(scalars.front()), num(scalars.back()), num(*lo),
             num(*hi), note});
    }
    i = j;
  }
  t.Print(out, "  ");
}

// An evaluation's provenance (meta.evaluation, footprint evaluate) and the framework's own
// operators (the value framework.operators of the agent's --trace-framework): the top five.
void PrintEvaluation(const RunSummary& s, const json& meta, const Decoration& deco,
                     std::ostream& out) {
  const json ev = meta.value("evaluation", json::object());
  if (ev.empty()) return;
  const json framework = ev.value("framework", json::object());
  const json model = ev.value("model", json::object());
  out << "\n" << Paint("evaluation", "1", deco.color) << "\n";
  PrintLine(out, "  manifest " + ev.value("manifest_path", std::string("?")) + " (sha256 " +
                     ev.value("manifest_sha256", std::string()).substr(0, 12) + "…), model " +
                     model.value("torchvision", model.value("file", std::string("?"))) +
                     ", batch " + std::to_string(ev.value("batch", 0)) + ", " +
                     framework.value("framework", std::string("?")) + " " +
                     framework.value("version", std::string("?")) + " on " +
                     framework.value("device", std::string("?")) + ", " +
                     std::to_string(framework.value("threads", 0)) + " threads");
  auto ops = std::find_if(s.values.rbegin(), s.values.rend(),
                          [](const ValueRecord& v) { return v.name == "framework.operators"; });
  if (ops == s.values.rend()) return;
  const json report = json::parse(ops->data_json, nullptr, false);
  if (!report.is_object() || !report.contains("operators")) return;
  out << "  framework operators (torch.profiler, " << report.value("profiled_batches", 0)
      << " batches after the load), top 5 by self CPU time:\n";
  Table t({"operator", "calls", "self CPU", "CPU total"}, {1, 2, 3});
  int shown = 0;
  for (const json& op : report["operators"]) {
    if (shown++ == 5) break;
    t.Add({op.value("name", std::string("?")), std::to_string(op.value("calls", 0)),
           FormatDuration(op.value("self_cpu_s", 0.0)),
           FormatDuration(op.value("cpu_total_s", 0.0))});
  }
  t.Print(out, "    ");
}

// footprint's MIG advice for each whole GPU (MIG off) with a table (footprint/mig.h) that the
// run used: the smallest profile that holds the peak of its own GPU memory (gpu.memory.tree)
// plus 10 %.
void PrintMigAdvice(const RunSummary& s, const json& meta, const Decoration& deco,
                    std::ostream& out) {
  const json devices = meta.value("gpu", json::object()).value("devices", json::object());
  for (const MetricSummary& m : s.metrics) {
    if (m.metric != "gpu.memory.tree" || !m.scope.empty() || !(m.max > 0)) continue;
    const json d = devices.value(m.entity, json::object());
    const MigGpu* gpu = FindMigGpu(d.value("name", std::string()));
    // A MIG device, or a GPU already split into them: the advice is for a whole GPU.
    if (gpu == nullptr || d.contains("gpu_instance_id") ||
        d.value("mig_mode", std::string()) == "enabled") {
      continue;
    }
    const auto profile = SmallestFittingProfile(*gpu, m.max);
    std::ostringstream advice;
    advice << ": " << m.entity << " (" << d.value("name", std::string()) << ") held at most "
           << FormatBytes(m.max) << " for this run; with a 10 % margin ";
    if (profile) {
      advice << profile->name << " fits (" << profile->compute_slices << " of 7 compute slices, "
             << gpu->profile_gib(*profile) << " GiB; " << profile->instances << " per " << gpu->name
             << ")";
    } else {
      advice << "no MIG profile of the " << gpu->name << " holds it";
    }
    out << "  " << Paint("MIG", "33", deco.color);
    PrintLine(out, advice.str());
  }
}

// Where each GPU's energy came from ("gpu:0: counter, gpu:1: power integrated").
std::string GpuEnergySources(const json& meta) {
  const json devices = meta.value("gpu", json::object()).value("devices", json::object());
  std::string sources;
  for (const auto& [entity, d] : devices.items()) {
    if (d.contains("energy_source")) {
      sources +=
          (sources.empty() ? "" : ", ") + entity + ": " + d["energy_source"].get<std::string>();
    }
  }
  return sources;
}

// What to know about the GPU figures (footprint/gpu_report.h), when there is anything.
void PrintGpuNotes(const RunSummary& s, const Decoration& deco, std::ostream& out) {
  std::vector<std::string> notes = GpuNotes(s);
  if (notes.empty()) return;
  out << "\n" << Paint("gpu", "1", deco.color) << "\n";
  for (const std::string& note : notes) PrintLine(out, "  note: " + note);
}

// Points of a sparkline: wide enough to see a trend, narrow enough for the table.
constexpr size_t kTrendPoints = 24;

// The series worth a sparkline: the tree's CPU and memory, and the GPUs'.
bool MainSeries(const MetricSummary& m) {
  static const std::set<std::string_view> kMain = {"cpu", "memory", "gpu", "gpu.memory",
                                                   "gpu.power"};
  return m.scope.empty() && kMain.count(m.metric) > 0;
}

// A stored value as text: strings as they are, anything else as JSON.
std::string TextOf(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// An experiment's reproducibility record (meta.repro), compactly.
void PrintRepro(const json& r, std::ostream& out) {
  if (r.contains("script")) {
    const json& sc = r["script"];
    std::string script = TextOf(sc.value("path", json("")));
    if (sc.contains("git")) {
      script += " (git " + TextOf(sc["git"].value("commit", json(""))).substr(0, 12) +
                (sc["git"].value("dirty", false) ? ", dirty" : "") + ")";
    }
    PrintField(out, "script", script);
  }
  if (r.contains("interpreter")) {
    const json& in = r["interpreter"];
    std::string interp =
        TextOf(in.value("name", json(""))) + " " + TextOf(in.value("version", json("?")));
    if (in.contains("path")) interp += " (" + TextOf(in["path"]) + ")";
    if (in.contains("packages"))
      interp += ", " + std::to_string(in["packages"].size()) + " packages";
    PrintField(out, "interp", interp);
  }
  if (r.contains("driver")) PrintField(out, "driver", TextOf(r["driver"]));
  if (r.contains("inputs") && !r["inputs"].empty()) {
    std::string inputs;
    for (auto& [path, sha] : r["inputs"].items()) {
      inputs += (inputs.empty() ? "" : ", ") + path.substr(path.rfind('/') + 1) + " " +
                (sha.is_string() ? sha.get<std::string>().substr(0, 12) : "(unreadable)");
    }
    PrintField(out, "inputs", inputs);
  }
  if (r.contains("env")) {
    int redacted = 0;
    for (auto& [k, v] : r["env"].items()) redacted += v == "<redacted>";
    PrintField(out, "env",
               std::to_string(r["env"].size()) + " variables recorded (" +
                   std::to_string(redacted) + " redacted); footprint show --json for all");
  }
}

// An experiment's run: where it sits in the plan and, compactly, its reproducibility record.
void PrintExperiment(const json& meta, std::ostream& out) {
  if (!meta.contains("experiment") || !meta["experiment"].is_object()) return;
  const json& e = meta["experiment"];
  PrintField(out, "plan",
             TextOf(e.value("key", json(""))) + " in " + TextOf(e.value("plan", json(""))));
  if (meta.contains("repro") && meta["repro"].is_object()) PrintRepro(meta["repro"], out);
}

// What may still wait in a local buffer, and where to send it from.
std::string WaitingText(const WaitingBuffer& w) {
  const std::string since = w.where.shipped_at_ns > 0
                                ? " (the last arrived " + FormatUtc(w.where.shipped_at_ns) + " UTC)"
                                : " (none arrived yet)";
  if (!w.here) {
    return "part of this run may still wait on " + w.where.host + " in " + w.where.path + since +
           ": run `footprint push` there";
  }
  if (w.here->live)
    return "a live footprint is still sending part of this run from " + w.here->path;
  const std::string what = std::to_string(w.here->samples) + " samples (" +
                           std::to_string(w.here->entries) + " changes) of this run wait on ";
  if (w.where.host == HostName()) {
    return what + "this machine in " + w.here->path + ": `footprint push` sends them";
  }
  const std::string dir = w.here->path.substr(0, w.here->path.rfind('/'));
  return what + w.where.host + " in " + w.here->path +
         ", a folder this machine shares: " + "`footprint push --dir " + dir +
         "` sends them from here";
}

// The parts of a multi-host run, a line per host; the totals below are their sums.
void PrintHosts(const RunSummary& s, std::ostream& out) {
  if (s.hosts.empty()) return;
  std::string partial;
  for (const HostPart& part : s.hosts) {
    if (part.partial) partial += (partial.empty() ? "" : ", ") + part.host;
  }
  PrintField(out, "hosts",
             std::to_string(s.hosts.size()) + " of " + std::to_string(s.hosts_expected) +
                 " reported; the totals below are their sums" +
                 (partial.empty() ? "" : ", partial: " + partial + " stored no totals"));
  for (const HostPart& part : s.hosts) {
    auto total = [&](const char* name) {
      auto it = part.totals.find(name);
      return it == part.totals.end() ? 0.0 : it->second;
    };
    PrintLine(out, "  " + part.host + "  " + RunStatusText(part.run) + ", cpu " +
                       FormatDuration(total("cpu_user_s") + total("cpu_system_s")) +
                       ", peak memory " + FormatBytes(total("peak_memory_bytes")) + " (run " +
                       part.run.id.substr(0, 8) + ")" +
                       (part.partial ? "; partial: what its " + std::to_string(part.samples) +
                                           " stored samples add up to"
                                     : ""));
  }
}

// The container a run started (docs/containers.md): which, and where its figures came from.
void PrintContainer(const json& meta, std::ostream& out) {
  const json c = meta.value("container", json::object());
  if (c.empty()) return;
  std::string line = c.value("engine", std::string()) + " " +
                     c.value("id", std::string()).substr(0, 12) + " " +
                     c.value("image", std::string());
  if (!c.value("ran", false)) {
    line += ": did not run, none of its figures are in this run";
  } else if (c.value("attached", false)) {  // footprint run --container
    line += ", attached until " + c.value("ended", std::string("?")) +
            ": the run's figures are its own, from the engine's cgroup " +
            c.value("cgroup", std::string()) + " (" + c.value("figures_from", "") + ")";
  } else if (c.value("read", false)) {
    line += ", its figures (container_* and in cpu, peak memory, io) from the engine's cgroup " +
            c.value("cgroup_parent", std::string()) + " (" + c.value("figures_from", "") +
            "); peak memory adds the client's peak to the container's, an upper bound";
  }
  PrintField(out, "container", line);
}

// A run served by an agent that outlives it (evaluate's one agent for every run): its memory is
// that process's, with what the runs before it left there.
void PrintResident(const json& meta, std::ostream& out) {
  const json r = meta.value("resident", json::object());
  if (r.empty()) return;
  PrintField(out, "agent",
             "pid " + std::to_string(r.value("pid", 0)) +
                 ", serving several runs: its memory here is its RSS, with what "
                 "the runs before this one left in it (--agent-per-run: apart)");
}

// The run's own lines: what it is, how it went, where and how it ran.
void PrintRunHeader(const RunSummary& s, const json& meta, const Decoration& deco,
                    std::ostream& out) {
  const RunRecord& r = s.run;
  PrintField(out, "run", r.id + "  " + r.name);
  out << "status   " << Paint(RunStatusText(r), "31", deco.color && r.status != RunStatus::kOk)
      << (r.status == RunStatus::kInterrupted
              ? "  (footprint stopped before the command ended; data up to its last flush)"
              : "")
      << "\n";
  if (auto lost = IncompleteReason(r)) PrintField(out, "lost", *lost);
  for (const WaitingBuffer& w : s.waiting) PrintField(out, "waiting", WaitingText(w));
  // Where and by whom, when known (a run imported from UMLAUT's database has neither).
  std::string started = FormatUtc(r.started_at_ns) + " UTC";
  if (!r.host.empty()) started += " on " + r.host;
  if (!r.user.empty()) started += " by " + r.user;
  PrintField(out, "started", started);
  PrintField(out, "command", FormatCommand(r.command));
  PrintField(out, "cwd", r.cwd);
  PrintContainer(meta, out);
  PrintResident(meta, out);
  PrintHosts(s, out);
  if (!r.group_id.empty()) {
    const std::string group = r.group_id.substr(0, 8);
    PrintField(
        out, "group",
        group + ", " +
            (IsWarmup(r) ? std::string("warm-up") : "repetition " + std::to_string(r.repetition)) +
            " (statistics of the group: footprint show group:" + group + ")");
  }
  if (!r.description.empty()) PrintField(out, "about", r.description);
  for (const char* key : {"tags", "params"}) {
    if (!meta.contains(key) || !meta[key].is_object() || meta[key].empty()) continue;
    std::string pairs;
    for (auto& [k, v] : meta[key].items()) {
      pairs += (pairs.empty() ? "" : " ") + k + "=" + TextOf(v);
    }
    PrintField(out, key, pairs);
  }
  if (meta.contains("git")) {
    PrintField(out, "git",
               TextOf(meta["git"].value("commit", json(""))) +
                   (meta["git"].value("dirty", false) ? " (dirty)" : ""));
  }
  if (meta.contains("slurm") && meta["slurm"].is_object()) {
    PrintField(out, "slurm", SlurmJobText(meta["slurm"]));
  }
  // Series sampled more than a quarter below the asked rate, and why (MonitorSession).
  const json below_rate = meta.value("below_asked_rate", json::object());
  for (auto& [metric, why] : below_rate.items()) {
    auto seconds = [&](const char* key) {
      return FormatDuration(meta.value(key, json::object()).value(metric, 0.0) / 1e9);
    };
    PrintField(out, "below rate",
               metric + " every " + seconds("achieved_intervals_ns") + ", asked " +
                   seconds("intervals_ns") + ": " + TextOf(why));
  }
  PrintExperiment(meta, out);
}

// Where a hardware counter's total came from: its event, and whether it was scaled.
std::string CounterNote(const json& meta, const char* metric) {
  json e =
      meta.contains("perf") ? meta["perf"]["events"].value(metric, json::object()) : json::object();
  return "event " + e.value("event", std::string("?")) + ", whole tree" +
         (e.value("multiplexed", false) ? ", scaled (multiplexed)" : "");
}

// footprint's own CPU time as a share of one core over the run; "" when unknown.
std::string OverheadNote(const RunSummary& s) {
  auto cpu = s.totals.find("monitor_cpu_s");
  if (cpu == s.totals.end() || !(s.duration_s > 0)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %% of one core over the run",
                100 * cpu->second / s.duration_s);
  return buf;
}

// The run totals, each with where it came from.
Table TotalsTable(const RunSummary& s, const json& meta) {
  json sources = meta.value("sources", json::object());
  auto total = [&](const std::string& name) -> std::optional<double> {
    auto it = s.totals.find(name);
    if (it == s.totals.end()) return std::nullopt;
    return it->second;
  };
  Table t({"", "", ""}, {1});
  std::set<std::string> shown;
  auto row = [&](const char* label, const char* name, const char* unit, std::string note = "") {
    shown.insert(name);
    std::optional<double> v = name == std::string("duration_s") ? s.duration_s : total(name);
    t.Add({label, v ? FormatValue(unit, *v) : "-", v ? note : ""});
  };
  // Rows only for runs that have the figure (opt-in measurements, newer figures).
  auto measured_row = [&](const char* label, const char* name, const char* unit,
                          std::string note = "") {
    if (total(name)) row(label, name, unit, std::move(note));
  };
  row("duration", "duration_s", "s");
  row("cpu user", "cpu_user_s", "s", sources.value("cpu", ""));
  row("cpu system", "cpu_system_s", "s");
  row("peak memory", "peak_memory_bytes", "bytes", sources.value("peak_memory", ""));
  row("largest process", "max_process_peak_bytes", "bytes", "largest high-water mark");
  measured_row("rss sum peak", "rss_sum_peak_bytes", "bytes",
               "sum of the processes' RSS: a page shared by N processes counts N times");
  measured_row("page cache peak", "page_cache_peak_bytes", "bytes",
               "files the tree read or wrote, charged to its cgroup; not in peak memory");
  row("io read", "io_read_bytes", "bytes");
  row("io written", "io_write_bytes", "bytes");
  measured_row("gpu energy", "gpu_energy_j", "J", GpuEnergySources(meta));
  measured_row("gpu energy of tree", "gpu_energy_tree_j", "J",
               "estimate: the tree's share of each GPU's energy (docs/metrics.md)");
  measured_row("cpu energy", "cpu_energy_j", "J", "RAPL package domains, whole machine");
  measured_row("dram energy", "dram_energy_j", "J", "RAPL DRAM domains, whole machine");
  measured_row("instructions", "perf_instructions", "count",
               CounterNote(meta, "perf.instructions"));
  measured_row("cycles", "perf_cycles", "count", CounterNote(meta, "perf.cycles"));
  measured_row("cache misses", "perf_cache_misses", "count",
               CounterNote(meta, "perf.cache_misses"));
  // A profiler's own processes (nsys, ncu: docs/profiling.md), apart from the program's.
  measured_row("program cpu", "program_cpu_s", "s", "the tree's CPU less the profiler's");
  measured_row("profiler cpu", "profiler_cpu_s", "s", "the profiler's own processes");
  measured_row("profiler rss", "profiler_peak_rss_bytes", "bytes",
               "largest high-water mark of a profiler process");
  measured_row("profiler traces", "profiler_trace_bytes", "bytes", "the run's trace artifacts");
  row("footprint cpu", "monitor_cpu_s", "s", OverheadNote(s));
  row("footprint rss", "monitor_peak_rss_bytes", "bytes");
  // Totals this view does not know by name (added by newer probes), in the same way.
  for (const auto& [name, value] : s.totals) {
    if (shown.count(name) == 0) t.Add({FigureLabel(name), FormatValue(TotalUnit(name), value), ""});
  }
  return t;
}

// Per sampled series: count, min, mean, p50, p95, max (and a sparkline on a terminal).
void PrintSamples(const RunSummary& s, const Decoration& deco, std::ostream& out) {
  if (!s.metrics.empty()) {
    // The scope column only when the run has scopes.
    const bool scoped = !s.scopes.empty();
    out << "\n"
        << Paint("samples", "1", deco.color)
        << (scoped ? " (a scope row counts only the samples taken while it was open)\n" : "\n");
    std::vector<std::string> header = {"metric", "entity", "count", "min",
                                       "mean",   "p50",    "p95",   "max"};
    if (scoped) header.insert(header.begin() + 2, "scope");
    if (deco.sparklines) header.push_back("trend");
    Table m(header,
            scoped ? std::vector<size_t>{3, 4, 5, 6, 7, 8} : std::vector<size_t>{2, 3, 4, 5, 6, 7});
    for (const MetricSummary& ms : s.metrics) {
      auto f = [&](double v) { return ms.count ? FormatValue(ms.unit, v) : "-"; };
      std::vector<Cell> cells = {ms.metric, ms.entity,  std::to_string(ms.count),
                                 f(ms.min), f(ms.mean), f(ms.p50),
                                 f(ms.p95), f(ms.max)};
      if (scoped) cells.insert(cells.begin() + 2, ms.scope);
      if (deco.sparklines) cells.push_back(MainSeries(ms) ? Sparkline(ms.trend) : "");
      m.Add(std::move(cells));
    }
    m.Print(out, "  ");
  }
}

// The scopes a program timed through the API, and those it could not store.
void PrintScopes(const RunSummary& s, const Decoration& deco, std::ostream& out) {
  if (!s.scopes.empty()) {
    out << "\n" << Paint("scopes", "1", deco.color) << "\n";
    Table st({"name", "count", "total", "mean", "min", "max", ""}, {1, 2, 3, 4, 5});
    for (const ScopeSummary& sc : s.scopes) {
      bool any = sc.count > sc.unfinished;
      auto f = [&](double v) { return any ? FormatDuration(v) : "-"; };
      st.Add(
          {sc.name, std::to_string(sc.count), f(sc.total_s), f(sc.mean_s), f(sc.min_s), f(sc.max_s),
           sc.unfinished ? std::to_string(sc.unfinished) + " never ended (the process died)" : ""});
    }
    st.Print(out, "  ");
  }
  if (s.scopes_dropped > 0) {
    out << "  " << Paint(std::to_string(s.scopes_dropped) + " scope(s) dropped", "33", deco.color)
        << ": a thread opened them faster than footprint could store them, past the bound of "
           "its queue; the figures above leave them out\n";
  }
}

void PrintRun(const RunSummary& s, const Decoration& deco, std::ostream& out) {
  json meta = json::parse(s.run.meta_json, nullptr, false);
  if (!meta.is_object()) meta = json::object();
  PrintRunHeader(s, meta, deco, out);
  out << "\n" << Paint("totals", "1", deco.color) << "\n";
  TotalsTable(s, meta).PrintBody(out, "  ");
  if (auto note = CpuDisagreement(s)) {
    out << "  " << Paint("note", "33", deco.color);
    PrintLine(out, ": " + *note);
  }
  PrintGpuNotes(s, deco, out);
  PrintMigAdvice(s, meta, deco, out);
  if (meta.contains("load") && meta["load"].is_object()) {
    out << "\n" << Paint("load", "1", deco.color) << "\n";
    PrintLoadSummary(meta["load"], s.totals, s.load_energy, "  ", out);
  }
  PrintEvaluation(s, meta, deco, out);
  PrintSamples(s, deco, out);
  PrintScopes(s, deco, out);
  PrintValues(s, deco, out);
  if (!s.artifacts.empty()) {
    out << "\n" << Paint("artifacts", "1", deco.color) << "\n";
    Table at({"name", "size", "sha256", "path"}, {1});
    for (const ArtifactRecord& a : s.artifacts) {
      at.Add({a.name, FormatBytes(static_cast<double>(a.size)), a.sha256.substr(0, 16), a.path});
    }
    at.Print(out, "  ");
  }
}

}  // namespace

namespace {

// The widest the runs table's NAME and (on a terminal) COMMAND columns get.
constexpr size_t kRunsNameColumns = 40;
constexpr size_t kRunsCommandColumns = 60;

struct RunsFilter {
  std::string text;   // in the name or the command line; empty: any
  std::string since;  // a duration back from now; empty: any time
  size_t limit = 0;   // the latest N; 0: all
};

// The runs `filter` keeps, oldest first.
Result<std::vector<RunRecord>> FilterRuns(const std::vector<RunRecord>& all,
                                          const RunsFilter& filter) {
  int64_t since_ns = 0;
  if (!filter.since.empty()) {
    FP_ASSIGN_OR_RETURN(int64_t back, ParseDurationNs(filter.since));
    since_ns = RealtimeNs() - back;
  }
  std::vector<RunRecord> kept;
  for (const RunRecord& r : all) {
    if (r.started_at_ns < since_ns) continue;
    if (!filter.text.empty() && r.name.find(filter.text) == std::string::npos &&
        FormatCommand(r.command).find(filter.text) == std::string::npos) {
      continue;
    }
    kept.push_back(r);
  }
  if (filter.limit > 0 && kept.size() > filter.limit) {
    kept.erase(kept.begin(), kept.end() - static_cast<ptrdiff_t>(filter.limit));
  }
  return kept;
}

// `runs`' table: a line per run, oldest first.
void PrintRunsTable(const std::vector<RunRecord>& runs) {
  // The group column only when some run belongs to a group.
  const bool grouped =
      std::any_of(runs.begin(), runs.end(), [](const RunRecord& r) { return !r.group_id.empty(); });
  std::vector<std::string> header = {"ID",       "NAME",   "STATUS", "STARTED (UTC)",
                                     "DURATION", "COMMAND"};
  if (grouped) header.insert(header.begin() + 5, "GROUP");
  Table t(header, {4});
  // One long name must not pad every line to its length (--json has it whole); the
  // command, the last column, is cut only on a terminal, which has a width.
  t.Cap(1, kRunsNameColumns);
  if (::isatty(STDOUT_FILENO)) t.Cap(header.size() - 1, kRunsCommandColumns);
  for (const RunRecord& r : runs) {
    int64_t end = r.ended_at_ns.value_or(r.heartbeat_ns.value_or(r.started_at_ns));
    std::vector<Cell> row = {r.id.substr(0, 8),
                             r.name,
                             RunStatusText(r),
                             FormatUtc(r.started_at_ns),
                             FormatDuration(static_cast<double>(end - r.started_at_ns) / 1e9),
                             FormatCommand(r.command)};
    if (grouped) {
      std::string group;
      if (!r.group_id.empty()) {
        group = r.group_id.substr(0, 8) +
                (IsWarmup(r) ? " warm-up" : " #" + std::to_string(r.repetition));
      }
      row.insert(row.begin() + 5, group);
    }
    t.Add(std::move(row));
  }
  t.Print(std::cout);
}

}  // namespace

Action AddRuns(CLI::App& app) {
  struct Args {
    std::string db;
    bool json = false;
    RunsFilter filter;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd =
      AddDbSubcommand(app, "runs", "List the runs in the database, oldest first.", args->db);
  cmd->add_option("--filter", args->filter.text,
                  "only runs whose name or command line contains TEXT");
  cmd->add_option("--since", args->filter.since,
                  "only runs started within this long before now (e.g. 90m, 6h, 7d)");
  cmd->add_option("--limit", args->filter.limit, "only the latest N runs (after --filter)")
      ->option_text("N");
  cmd->add_flag("--json", args->json, "print a JSON array (stable API)");
  cmd->footer(
      "The command column is quoted as a POSIX shell reads it back; on a terminal, a command "
      "longer than 60 characters is cut, piped it is whole.\n\n"
      "Examples:\n  footprint runs\n  footprint runs --filter train.py --since 7d --limit 20\n"
      "  footprint runs -o experiments.db --json");
  return ReadingAction(
      args->db, [args](Store& store, const std::vector<RunRecord>& all) -> Result<int> {
        FP_ASSIGN_OR_RETURN(std::vector<RunRecord> runs, FilterRuns(all, args->filter));
        if (args->json) {
          json out = json::array();
          for (const RunRecord& r : runs) {
            out.push_back({{"id", r.id},
                           {"name", r.name},
                           {"status", RunStatusName(r.status)},
                           {"exit_code", OrNull(r.exit_code)},
                           {"started_at_ns", r.started_at_ns},
                           {"ended_at_ns", OrNull(r.ended_at_ns)},
                           {"command", r.command},
                           {"group_id", TextOrNull(r.group_id)},
                           {"repetition", r.repetition}});
          }
          std::cout << JsonText(out, 2) << "\n";
          return kExitOk;
        }
        if (all.empty()) {
          std::cout << "no runs in " << store.location()
                    << " yet; record one with: footprint run -- COMMAND\n";
          return kExitOk;
        }
        if (runs.empty()) {
          std::cout << "none of the " << all.size() << " runs in " << store.location()
                    << " matches; footprint runs without options lists them all\n";
          return kExitOk;
        }
        PrintRunsTable(runs);
        return kExitOk;
      });
}

namespace {

struct ShowArgs {
  std::string db;
  std::vector<std::string> runs;
  bool json = false, group = false, no_sparklines = false;
  ColorMode color = ColorMode::kAuto;
};

// A run's summary, or a group's.
using ShownSummary = std::variant<RunSummary, SetSummary>;

// The summaries of `specs`, in their order (`group`: each run's group instead of the run).
Result<std::vector<ShownSummary>> SummarizeShown(Store& store, const std::vector<RunRecord>& runs,
                                                 const std::vector<std::string>& specs, bool group,
                                                 size_t trend_points) {
  std::vector<ShownSummary> shown;
  for (const std::string& spec : specs) {
    FP_ASSIGN_OR_RETURN(RunSet set, ResolveRunSetNoted(runs, spec, group));
    if (set.is_group()) {
      FP_ASSIGN_OR_RETURN(SetSummary summary, SummarizeSet(store, std::move(set)));
      shown.emplace_back(std::move(summary));
    } else {
      FP_ASSIGN_OR_RETURN(RunSummary summary, SummarizeRun(store, set.runs.front(), trend_points));
      shown.emplace_back(std::move(summary));
    }
  }
  return shown;
}

// --json: one object, or a list of them when several were asked for.
void PrintShownJson(const std::vector<ShownSummary>& shown) {
  auto to_json = [](const ShownSummary& item, int indent) {
    if (const auto* run = std::get_if<RunSummary>(&item)) return SummaryJson(*run, indent);
    return SetSummaryJson(std::get<SetSummary>(item), indent);
  };
  if (shown.size() == 1) {
    std::cout << to_json(shown[0], 2) << "\n";
    return;
  }
  json list = json::array();
  for (const auto& item : shown) list.push_back(json::parse(to_json(item, -1)));
  std::cout << JsonText(list, 2) << "\n";
}

void PrintShown(const std::vector<ShownSummary>& shown, const Decoration& deco) {
  for (size_t i = 0; i < shown.size(); ++i) {
    if (i) std::cout << "\n";
    if (const auto* run = std::get_if<RunSummary>(&shown[i])) {
      PrintRun(*run, deco, std::cout);
    } else {
      PrintSetSummary(std::get<SetSummary>(shown[i]), deco, std::cout);
    }
  }
}

}  // namespace

Action AddShow(CLI::App& app) {
  auto args = std::make_shared<ShowArgs>();
  CLI::App* cmd = AddDbSubcommand(
      app, "show",
      "Show runs (totals, and count/min/mean/p50/p95/max of every sampled metric) or groups "
      "of repetitions (mean, sd, median, min, max, 95 % CI and outliers of every total).",
      args->db);
  cmd->add_option("RUN", args->runs,
                  "run id, unique id prefix (4+ characters), run name (its latest run) or "
                  "'last' (default); group:ID, group:PREFIX, group:last or group:RUN for a "
                  "group of repetitions");
  cmd->add_flag("--group", args->group, "show the group each RUN belongs to");
  cmd->add_flag("--json", args->json,
                "print JSON (stable API): one object per run or group, a list when several "
                "are given");
  cmd->add_flag("--no-sparklines", args->no_sparklines, "no sparklines, even on a UTF-8 terminal");
  AddColorOption(*cmd, args->color);
  cmd->footer(
      "Examples:\n  footprint show                 # the last run\n"
      "  footprint show train-resnet    # the latest run named train-resnet\n"
      "  footprint show group:last      # the statistics of the latest group (run -r N)\n"
      "  footprint show 3f2a 9c1e --json");
  return ReadingAction(
      args->db, [args](Store& store, const std::vector<RunRecord>& runs) -> Result<int> {
        std::vector<std::string> specs =
            args->runs.empty() ? std::vector<std::string>{"last"} : args->runs;
        const Decoration deco =
            args->json ? Decoration{}
                       : DecorationFor(STDOUT_FILENO, args->color, !args->no_sparklines);
        // Every spec is resolved before anything is printed: a bad one prints only its error.
        FP_ASSIGN_OR_RETURN(
            std::vector<ShownSummary> shown,
            SummarizeShown(store, runs, specs, args->group, deco.sparklines ? kTrendPoints : 0));
        if (args->json) {
          PrintShownJson(shown);
        } else {
          PrintShown(shown, deco);
        }
        return kExitOk;
      });
}

}  // namespace footprint::cli
