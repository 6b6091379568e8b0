// footprint runs / footprint show: read runs back.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/format.h"
#include "footprint/gpu_report.h"
#include "footprint/report.h"
#include "run/run_metadata.h"
#include "util/strings.h"

namespace footprint::cli {
namespace {

using json = nlohmann::json;

// Opens an existing database, writable when possible so that runs whose monitor died can be
// marked interrupted, read-only otherwise.
Result<std::unique_ptr<Store>> OpenExisting(const std::string& db) {
  bool writable = ::access(db.c_str(), W_OK) == 0;
  auto store = OpenStore(db, {.read_only = !writable});
  if (!store.ok() && writable && store.status().code() == StatusCode::kDatabase) {
    // e.g. the folder is read-only, so WAL files cannot be created: try reading only.
    auto ro = OpenStore(db, {.read_only = true});
    if (ro.ok()) return ro;
  }
  return store;
}

Result<std::vector<RunRecord>> LoadRuns(Store& store) {
  auto runs = store.ListRuns();
  if (!runs.ok()) return runs;
  FP_RETURN_IF_ERROR(ReconcileInterrupted(store, *runs));
  return runs;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += ' ';
    bool plain = !p.empty() && p.find_first_of(" \t\"'\\$`") == std::string::npos;
    out += plain ? p : "'" + p + "'";
  }
  return out;
}

std::string StatusText(const RunRecord& r) {
  std::string s(RunStatusName(r.status));
  if (r.exit_code && (*r.exit_code != 0 || r.status != RunStatus::kOk)) {
    s += " (exit " + std::to_string(*r.exit_code) + ")";
  }
  return s;
}

// Valued metrics by name: scalars as count/first/last/min/max, documents by kind.
void PrintValues(const RunSummary& s, std::ostream& out) {
  if (s.values.empty()) return;
  out << "\nvalues\n";
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

// The GPU block: the energy totals and what to know about them (footprint/gpu_report.h).
void PrintGpu(const RunSummary& s, const json& meta, std::ostream& out) {
  const json devices = meta.value("gpu", json::object()).value("devices", json::object());
  if (devices.empty()) return;
  std::string sources;
  for (const auto& [entity, d] : devices.items()) {
    if (d.contains("energy_source")) {
      sources +=
          (sources.empty() ? "" : ", ") + entity + ": " + d["energy_source"].get<std::string>();
    }
  }
  out << "\ngpu\n";
  Table t({"", "", ""}, {1});
  auto energy = [&](const char* label, const char* name, std::string note) {
    auto it = s.totals.find(name);
    t.Add({label, it == s.totals.end() ? "-" : FormatValue("J", it->second),
           it == s.totals.end() ? "" : std::move(note)});
  };
  energy("energy", "gpu_energy_j", sources);
  energy("energy of tree", "gpu_energy_tree_j",
         "estimate: each GPU's energy x the tree's share of it (docs/metrics.md)");
  std::ostringstream rows;
  t.Print(rows, "  ");
  std::string text = rows.str();
  out << text.substr(text.find('\n') + 1);
  for (const std::string& note : GpuNotes(s)) out << "  note: " << note << "\n";
}

void PrintRun(const RunSummary& s, std::ostream& out) {
  const RunRecord& r = s.run;
  json meta = json::parse(r.meta_json, nullptr, false);
  if (!meta.is_object()) meta = json::object();
  out << "run      " << r.id << "  " << r.name << "\n"
      << "status   " << StatusText(r)
      << (r.status == RunStatus::kInterrupted
              ? "  (footprint stopped before the command ended; data up to its last flush)"
              : "")
      << "\n"
      << "started  " << FormatUtc(r.started_at_ns) << " UTC on " << r.host << " by " << r.user
      << "\n"
      << "command  " << Join(r.command) << "\n"
      << "cwd      " << r.cwd << "\n";
  if (!r.description.empty()) out << "about    " << r.description << "\n";
  for (const char* key : {"tags", "params"}) {
    if (meta.contains(key) && !meta[key].empty()) {
      out << (std::string(key) + "       ").substr(0, 9);
      for (auto& [k, v] : meta[key].items()) out << k << "=" << v.get<std::string>() << " ";
      out << "\n";
    }
  }
  if (meta.contains("git")) {
    out << "git      " << meta["git"].value("commit", "")
        << (meta["git"].value("dirty", false) ? " (dirty)" : "") << "\n";
  }
  json sources = meta.value("sources", json::object());
  auto total = [&](const std::string& name) -> std::optional<double> {
    auto it = s.totals.find(name);
    if (it == s.totals.end()) return std::nullopt;
    return it->second;
  };
  out << "\ntotals\n";
  Table t({"", "", ""}, {1});
  auto row = [&](const char* label, const char* name, const char* unit, std::string note = "") {
    std::optional<double> v = name == std::string("duration_s") ? s.duration_s : total(name);
    t.Add({label, v ? FormatValue(unit, *v) : "-", v ? note : ""});
  };
  row("duration", "duration_s", "s");
  row("cpu user", "cpu_user_s", "s", sources.value("cpu", ""));
  row("cpu system", "cpu_system_s", "s");
  row("peak memory", "peak_memory_bytes", "bytes", sources.value("peak_memory", ""));
  row("largest process", "max_process_peak_bytes", "bytes", "largest high-water mark");
  row("io read", "io_read_bytes", "bytes");
  row("io written", "io_write_bytes", "bytes");
  std::string overhead;
  if (auto cpu = total("monitor_cpu_s"); cpu && s.duration_s > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f %% of one core over the run", 100 * *cpu / s.duration_s);
    overhead = buf;
  }
  row("footprint cpu", "monitor_cpu_s", "s", overhead);
  row("footprint rss", "monitor_peak_rss_bytes", "bytes");
  std::ostringstream tmp;
  t.Print(tmp, "  ");
  // Drop the empty header line.
  std::string text = tmp.str();
  out << text.substr(text.find('\n') + 1);
  PrintGpu(s, meta, out);

  if (!s.metrics.empty()) {
    // The scope column only when the run has scopes.
    const bool scoped = !s.scopes.empty();
    out << (scoped ? "\nsamples (a scope row counts only the samples taken while it was open)\n"
                   : "\nsamples\n");
    std::vector<std::string> header = {"metric", "entity", "count", "min",
                                       "mean",   "p50",    "p95",   "max"};
    if (scoped) header.insert(header.begin() + 2, "scope");
    Table m(header,
            scoped ? std::vector<size_t>{3, 4, 5, 6, 7, 8} : std::vector<size_t>{2, 3, 4, 5, 6, 7});
    for (const MetricSummary& ms : s.metrics) {
      auto f = [&](double v) { return ms.count ? FormatValue(ms.unit, v) : "-"; };
      std::vector<std::string> cells = {ms.metric, ms.entity,  std::to_string(ms.count),
                                        f(ms.min), f(ms.mean), f(ms.p50),
                                        f(ms.p95), f(ms.max)};
      if (scoped) cells.insert(cells.begin() + 2, ms.scope);
      m.Add(std::move(cells));
    }
    m.Print(out, "  ");
  }
  if (!s.scopes.empty()) {
    out << "\nscopes\n";
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
  PrintValues(s, out);
  if (!s.artifacts.empty()) {
    out << "\nartifacts\n";
    Table at({"name", "size", "sha256", "path"}, {1});
    for (const ArtifactRecord& a : s.artifacts) {
      at.Add({a.name, FormatBytes(static_cast<double>(a.size)), a.sha256.substr(0, 16), a.path});
    }
    at.Print(out, "  ");
  }
}

}  // namespace

Action AddRuns(CLI::App& app) {
  struct Args {
    std::string db;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("runs", "List the runs in the database, oldest first.");
  AddDbOption(*cmd, args->db);
  cmd->add_flag("--json", args->json, "print a JSON array (stable API)");
  cmd->footer("Examples:\n  footprint runs\n  footprint runs -o experiments.db --json");
  return [args]() -> int {
    auto store = OpenExisting(args->db);
    if (!store.ok()) return Fail(store.status());
    auto runs = LoadRuns(**store);
    if (!runs.ok()) return Fail(runs.status());
    if (args->json) {
      json out = json::array();
      for (const RunRecord& r : *runs) {
        out.push_back({{"id", r.id},
                       {"name", r.name},
                       {"status", RunStatusName(r.status)},
                       {"exit_code", r.exit_code ? json(*r.exit_code) : json(nullptr)},
                       {"started_at_ns", r.started_at_ns},
                       {"ended_at_ns", r.ended_at_ns ? json(*r.ended_at_ns) : json(nullptr)},
                       {"command", r.command}});
      }
      std::cout << out.dump(2) << "\n";
      return kExitOk;
    }
    if (runs->empty()) {
      std::cout << "no runs in " << (*store)->location()
                << " yet; record one with: footprint run -- COMMAND\n";
      return kExitOk;
    }
    Table t({"ID", "NAME", "STATUS", "STARTED (UTC)", "DURATION", "COMMAND"}, {4});
    for (const RunRecord& r : *runs) {
      int64_t end = r.ended_at_ns.value_or(r.heartbeat_ns.value_or(r.started_at_ns));
      std::string cmdline = Join(r.command);
      std::replace(cmdline.begin(), cmdline.end(), '\n', ' ');
      if (cmdline.size() > 60) cmdline = cmdline.substr(0, 57) + "...";
      t.Add({r.id.substr(0, 8), r.name, StatusText(r), FormatUtc(r.started_at_ns),
             FormatDuration(static_cast<double>(end - r.started_at_ns) / 1e9), cmdline});
    }
    t.Print(std::cout);
    return kExitOk;
  };
}

Action AddShow(CLI::App& app) {
  struct Args {
    std::string db;
    std::vector<std::string> runs;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "show", "Show runs: totals, and count/min/mean/p50/p95/max of every sampled metric.");
  AddDbOption(*cmd, args->db);
  cmd->add_option("RUN", args->runs,
                  "run id, unique id prefix (4+ characters), run name (its latest run) or "
                  "'last' (default)");
  cmd->add_flag("--json", args->json,
                "print JSON (stable API): one object per run, a list when several are given");
  cmd->footer(
      "Examples:\n  footprint show                 # the last run\n"
      "  footprint show train-resnet    # the latest run named train-resnet\n"
      "  footprint show 3f2a 9c1e --json");
  return [args]() -> int {
    auto store = OpenExisting(args->db);
    if (!store.ok()) return Fail(store.status());
    auto runs = LoadRuns(**store);
    if (!runs.ok()) return Fail(runs.status());
    std::vector<std::string> specs =
        args->runs.empty() ? std::vector<std::string>{"last"} : args->runs;
    std::vector<RunSummary> summaries;
    for (const std::string& spec : specs) {
      auto run = ResolveRun(*runs, spec);
      if (!run.ok()) return Fail(run.status());
      auto summary = SummarizeRun(**store, *run);
      if (!summary.ok()) return Fail(summary.status());
      summaries.push_back(std::move(summary).value());
    }
    if (args->json) {
      if (summaries.size() == 1) {
        std::cout << SummaryJson(summaries[0]) << "\n";
      } else {
        json list = json::array();
        for (const auto& s : summaries) list.push_back(json::parse(SummaryJson(s, -1)));
        std::cout << list.dump(2) << "\n";
      }
      return kExitOk;
    }
    for (size_t i = 0; i < summaries.size(); ++i) {
      if (i) std::cout << "\n";
      PrintRun(summaries[i], std::cout);
    }
    return kExitOk;
  };
}

}  // namespace footprint::cli
