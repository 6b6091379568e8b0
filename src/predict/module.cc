// The entry point of libfootprint-predict.so (predict/module.h): the graph's features, a
// prediction with the shipped (or a given) predictor, training and evaluation on a dataset.
#include "predict/module.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "footprint/env.h"
#include "footprint/mig.h"
#include "footprint/model_graph.h"
#include "footprint/store.h"
#include "predict/calibration.h"
#include "predict/json_members.h"
#include "predict/machine.h"
#include "predict/predictor_file.h"
#include "predict/predictors.h"
#include "predict/training_data.h"
#include "util/rusage.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace footprint::predict {
namespace {

using json = nlohmann::json;

// How far a prediction may be off on a machine other than the predictor's (or one it does not
// record): a factor either side. On the one such machine measured (issue 39: an Intel Xeon with
// AVX-512 against a predictor fitted on an AMD EPYC, 6 models at batches 1 and 8), 80 % of the
// measured latencies were within 5.3x of the predictions.
constexpr double kOtherMachineFactor = 5.3;

// The interpreter --calibrate runs calibrate.py with: Debian's, which the agent runs and
// footprint's Python module is built for.
constexpr char kCalibrationPython[] = "/usr/bin/python3";

json GraphJson(const ModelGraph& g) {
  json unknown = json::object();
  for (const auto& [type, n] : g.unknown_ops) unknown[type] = n;
  return {{"name", g.name},
          {"sha256", g.sha256},
          {"batch", g.batch},
          {"operators", g.ops.size()},
          {"macs", g.macs},
          {"flops", g.flops},
          {"param_bytes", g.param_bytes},
          {"peak_activation_bytes", g.peak_activation_bytes},
          {"op_counts", g.op_counts},
          {"unknown_operators", unknown}};
}

// The device a predictor is for, as --device names it: "cpu", or the GPU's MIG table name
// ("H100-80GB") from the name the agent recorded ("NVIDIA H100 80GB HBM3"), else that name.
std::string DeviceOf(const std::string& measured_on) {
  if (measured_on.empty() || Lower(measured_on) == "cpu") return "cpu";
  const MigGpu* gpu = FindMigGpu(measured_on);
  return gpu ? std::string(gpu->name) : measured_on;
}

json ErrorsJson(const Errors& e) {
  return {{"mean_family_mape_pct", e.mean_family_mape},
          {"worst_family_mape_pct", e.worst_family_mape},
          {"worst_family", e.worst_family},
          {"within_10pct", e.within_10pct},
          {"spearman", e.spearman},
          {"p80_relative_error", e.p80_relative_error},
          {"family_mape_pct", e.family_mape},
          {"rows", e.rows}};
}

std::vector<Row> Split(const std::vector<Row>& rows, const std::string& split) {
  std::vector<Row> out;
  for (const Row& r : rows) {
    if (r.split == split) out.push_back(r);
  }
  return out;
}

// The rows of one device: all of them where they share one, else those of `device` (--device),
// saying so. InvalidArgument, naming the devices, when none is of `device`.
Result<std::vector<Row>> OneDevice(std::vector<Row> rows, const std::string& device,
                                   const std::string& source, std::ostream& out) {
  std::set<std::string> devices;
  for (const Row& r : rows) devices.insert(DeviceOf(r.device));
  if (devices.size() <= 1) return rows;
  const std::string wanted = DeviceOf(device);
  std::string all;
  for (const std::string& d : devices) all += (all.empty() ? "" : ", ") + d;
  std::erase_if(rows, [&](const Row& r) { return Lower(DeviceOf(r.device)) != Lower(wanted); });
  if (rows.empty()) {
    return InvalidArgument(RedactedLocation(source) + ": rows measured on " + all + ", none on " +
                           wanted + ": name one with --device");
  }
  out << "footprint predict: the rows measured on " << wanted << " only (--device), of " << all
      << "\n";
  return rows;
}

// Of the latency predictors (kWorkPredictors), the one with the lowest mean held-out-family
// error for `target`, fitted on all `rows`, with every kind's errors.
struct Chosen {
  std::unique_ptr<Predictor> predictor;
  Errors errors;
  json baselines = json::object();
};
Result<Chosen> Choose(Target target, const std::vector<Row>& rows) {
  Chosen chosen;
  std::string best;
  for (const char* kind : kWorkPredictors) {
    FP_ASSIGN_OR_RETURN(Errors e, LeaveOneFamilyOut(kind, target, rows));
    chosen.baselines[kind] = ErrorsJson(e);
    if (best.empty() || e.mean_family_mape < chosen.errors.mean_family_mape) {
      best = kind;
      chosen.errors = e;
    }
  }
  FP_ASSIGN_OR_RETURN(chosen.predictor, Fit(best, target, rows));
  return chosen;
}

json CoverageJson(const WideningFit& fit) {
  return {{"stated", kStatedCoverage},
          {"plain", fit.coverage_plain},
          {"widened", fit.coverage_widened},
          {"nested", fit.coverage_nested},
          {"novel_half", {{"plain", fit.novel_half_plain}, {"widened", fit.novel_half_widened}}},
          {"widening", fit.widening},
          {"rows", fit.rows}};
}

// What predict needs to widen the latency band by novelty (novelty.h): the training rows'
// mixes and the widening fitted on `kind`'s leave-one-family-out predictions of them.
Result<json> NoveltySection(std::string_view kind, const std::vector<Row>& rows) {
  FP_ASSIGN_OR_RETURN(const auto predictions, PredictLeftOut(kind, Target::kLatency, rows));
  const WideningFit fit = FitWidening(predictions);
  return json{{"rows", MixesOf(rows)},
              {"widening", fit.widening},
              {"leave_one_family_out", CoverageJson(fit)}};
}

Status WritePredictor(const std::string& path, const json& file) {
  std::ofstream written(path);
  written << file.dump(1) << "\n";
  if (!written.flush()) return IoError("cannot write the predictor to " + path);
  return Status::Ok();
}

// Fits every latency predictor, keeps the one with the lowest mean held-out-family error, the
// memory predictor and, fitted on the rows that have their energy (at least 4), the best energy
// predictor; writes them with their errors to `out`, for the device the rows were measured on.
Result<int> Train(const PredictOptions& o, std::ostream& out) {
  FP_ASSIGN_OR_RETURN(TrainingData data, ReadTrainingData(o.train));
  FP_ASSIGN_OR_RETURN(const std::vector<Row> rows,
                      OneDevice(Split(data.rows, "train"), o.device, o.train, out));
  FP_ASSIGN_OR_RETURN(Chosen latency, Choose(Target::kLatency, rows));
  FP_ASSIGN_OR_RETURN(auto memory, Fit("memory_linear", Target::kPeakMemory, rows));
  FP_ASSIGN_OR_RETURN(Errors memory_errors,
                      LeaveOneFamilyOut("memory_linear", Target::kPeakMemory, rows));
  std::set<std::string> families;
  std::set<int> threads;  // a CPU predictor holds for the threads it was measured with
  for (const Row& r : rows) {
    families.insert(r.family);
    if (r.threads > 0) threads.insert(r.threads);
  }
  json file = {
      {"version", kPredictorVersion},
      {"device", DeviceOf(rows.empty() ? "" : rows[0].device)},
      {"training_set",
       {{"source", IsServerLocation(o.train) ? RedactedLocation(o.train)
                                             : std::filesystem::path(o.train).filename().string()},
        {"rows", rows.size()},
        {"families", families},
        {"threads", threads},
        {"measured_on", rows.empty() || rows[0].device.empty() ? "cpu" : rows[0].device}}},
      // A GPU predictor names its GPU (device); a CPU one records its machine (machine.h).
      {"machine",
       rows.empty() || DeviceOf(rows[0].device) != "cpu" ? json::object() : MachineOfRows(rows)},
      {"latency",
       {{"predictor", latency.predictor->ToJson()},
        {"held_out_families", ErrorsJson(latency.errors)}}},
      {"peak_memory",
       {{"predictor", memory->ToJson()}, {"held_out_families", ErrorsJson(memory_errors)}}},
      {"baselines", latency.baselines}};
  FP_ASSIGN_OR_RETURN(file["novelty"], NoveltySection(latency.predictor->kind(), rows));
  std::string energy_line;
  if (const std::vector<Row> measured = MeasuredRows(rows, Target::kEnergy);
      measured.size() >= kFewestRows) {
    FP_ASSIGN_OR_RETURN(Chosen energy, Choose(Target::kEnergy, measured));
    file["energy"] = {{"predictor", energy.predictor->ToJson()},
                      {"held_out_families", ErrorsJson(energy.errors)},
                      {"baselines", energy.baselines}};
    std::ostringstream line;
    line << ", energy " << energy.predictor->kind() << " " << energy.errors.mean_family_mape
         << " %";
    energy_line = line.str();
  }
  if (!data.left_out.empty()) {
    out << "footprint predict: " << data.left_out.size() << " run(s) left out, such as "
        << Inert(data.left_out.front()) << "\n";
  }
  const std::string path = o.out.empty() ? "predictor.json" : o.out;
  FP_RETURN_IF_ERROR(WritePredictor(path, file));
  out << "footprint predict: " << latency.predictor->kind() << " on " << rows.size() << " rows of "
      << families.size() << " families (" << file["device"].get<std::string>()
      << "): held-out-family latency MAPE " << latency.errors.mean_family_mape << " % (worst "
      << latency.errors.worst_family << " " << latency.errors.worst_family_mape
      << " %), peak memory " << memory_errors.mean_family_mape << " %" << energy_line
      << "; written to " << path << "\n";
  return 0;
}

// Every predictor on the dataset: leave-one-family-out and a random split (apart), the
// held-out families against a fit on the training ones, and the noise floor.
Result<int> Evaluate(const PredictOptions& o, std::ostream& out) {
  FP_ASSIGN_OR_RETURN(TrainingData data, ReadTrainingData(o.evaluate));
  std::ostringstream said;  // --json keeps its one line: what OneDevice says goes to the report
  FP_ASSIGN_OR_RETURN(data.rows, OneDevice(std::move(data.rows), o.device, o.evaluate, said));
  const std::vector<Row> train = Split(data.rows, "train"), outside = Split(data.rows, "held-out");
  json report = json::object();
  std::vector<double> cvs;
  for (const Row& r : train) cvs.push_back(r.latency_cv);
  std::sort(cvs.begin(), cvs.end());
  report["noise_floor_latency_cv"] = cvs.empty() ? 0 : cvs[cvs.size() / 2];
  report["rows"] = {{"train", train.size()}, {"held_out", outside.size()}};
  report["left_out"] = data.left_out;
  if (!said.str().empty()) report["rows_of_device"] = o.device;
  // Each target on the rows that have it; for latency, how often the band holds the truth.
  auto evaluate = [&](const char* kind, Target target) -> Result<json> {
    const std::vector<Row> fit = MeasuredRows(train, target);
    const std::vector<Row> check = MeasuredRows(outside, target);
    FP_ASSIGN_OR_RETURN(const auto left_out, PredictLeftOut(kind, target, fit));
    const Errors lofo = ErrorsOf(left_out);
    FP_ASSIGN_OR_RETURN(Errors random, RandomSplit(kind, target, fit, 0.8, 1));
    json j = {{"leave_one_family_out", ErrorsJson(lofo)}, {"random_split", ErrorsJson(random)}};
    const WideningFit widening = FitWidening(left_out);
    if (target == Target::kLatency) j["coverage"]["leave_one_family_out"] = CoverageJson(widening);
    if (!check.empty()) {
      FP_ASSIGN_OR_RETURN(auto fitted, Fit(kind, target, fit));
      const auto outside_predictions = PredictRows(*fitted, target, check, MixesOf(fit));
      j["held_out_families"] = ErrorsJson(ErrorsOf(outside_predictions));
      if (target == Target::kLatency) {
        // The band the file would state (its p80 over left-out families) on families no fit saw.
        const double p80 = lofo.p80_relative_error, w = widening.widening;
        j["coverage"]["held_out_families"] = {{"stated", kStatedCoverage},
                                              {"plain", Coverage(outside_predictions, p80, 0)},
                                              {"widened", Coverage(outside_predictions, p80, w)},
                                              {"widening", w},
                                              {"rows", outside_predictions.size()}};
      }
    }
    return j;
  };
  const bool energy = MeasuredRows(train, Target::kEnergy).size() >= kFewestRows;
  for (const char* kind : kWorkPredictors) {
    FP_ASSIGN_OR_RETURN(report["latency"][kind], evaluate(kind, Target::kLatency));
    if (energy) {
      FP_ASSIGN_OR_RETURN(report["energy"][kind], evaluate(kind, Target::kEnergy));
    }
  }
  FP_ASSIGN_OR_RETURN(report["peak_memory"]["memory_linear"],
                      evaluate("memory_linear", Target::kPeakMemory));
  out << report.dump(o.json ? -1 : 1) << "\n";
  return 0;
}

// The signal that reached footprint while calibrate.py ran, and calibrate.py's process: a
// terminal's Ctrl-C reaches both, a SIGTERM or SIGINT sent to footprint alone is passed on (as
// SIGTERM: the script dies without writing its result). footprint outlives it to say that
// nothing was stored.
volatile sig_atomic_t calibration_signal = 0;
volatile pid_t calibration_child = 0;
void NoteCalibrationSignal(int signal) {
  calibration_signal = signal;
  if (calibration_child > 0) ::kill(calibration_child, SIGTERM);
}

// Runs calibrate.py with footprint's environment and streams, with SIGINT and SIGTERM noted
// and passed on rather than fatal; its exit status (128+N: footprint got signal N).
int RunCalibrationScript(const std::vector<std::string>& argv) {
  struct sigaction note {
  }, old_int{}, old_term{};
  note.sa_handler = NoteCalibrationSignal;
  sigemptyset(&note.sa_mask);
  calibration_signal = 0;
  ::sigaction(SIGINT, &note, &old_int);
  ::sigaction(SIGTERM, &note, &old_term);
  std::vector<char*> args;
  for (const std::string& word : argv) args.push_back(const_cast<char*>(word.c_str()));
  args.push_back(nullptr);
  pid_t child = 0;
  int status = 127;  // a handler, unlike SIG_IGN, is reset by exec
  if (::posix_spawn(&child, args[0], nullptr, nullptr, args.data(), environ) == 0) {
    calibration_child = child;
    if (calibration_signal != 0) ::kill(child, SIGTERM);  // came before the pid was known
    int wait_status = 0;
    while (::waitpid(child, &wait_status, 0) < 0 && errno == EINTR) {
    }
    calibration_child = 0;
    status = ShellStatus(wait_status);
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  return calibration_signal != 0 ? 128 + calibration_signal : status;
}

// What a calibration found: its cost, where it is stored, the reference models' errors.
Result<int> ReportCalibration(const json& record, const std::string& run,
                              const std::string& location, bool as_json, std::ostream& out) {
  const double band = Number(record, "band", 0);
  if (as_json) {
    out << json{{"calibrated", run},
                {"db", location},
                {"band", band},
                {"errors", record["errors"]},
                {"rates", record["rates"]},
                {"overhead_s", record["overhead_s"]},
                {"wall_s", record["wall_s"]},
                {"cpu_s", record["cpu_s"]}}
               .dump()
        << "\n";
    return 0;
  }
  char line[160];
  std::snprintf(line, sizeof line, "in %.1f s (%.1f s of CPU)", Number(record, "wall_s", 0),
                Number(record, "cpu_s", 0));
  out << "footprint predict: this machine calibrated " << line << ", stored as run " << run
      << " in " << Inert(location) << "\n";
  std::string errors;
  for (const json& e : record["errors"]) {
    std::snprintf(line, sizeof line, "%s at batch %d: %s measured, %s predicted (%+.0f %%)",
                  Text(e, "model", "").c_str(), static_cast<int>(Number(e, "batch", 1)),
                  FormatDuration(Number(e, "measured_s", 0)).c_str(),
                  FormatDuration(Number(e, "predicted_s", 0)).c_str(),
                  100 * Number(e, "relative_error", 0));
    errors += (errors.empty() ? "" : "; ") + std::string(line);
  }
  out << "footprint predict: reference models (each with the overhead per call fitted on the "
         "others): "
      << Inert(errors) << "\n";
  out << "footprint predict: latency predictions on this machine now come with a band of "
      << std::lround(band * 100) << " % (the worst reference, at least "
      << std::lround(kLeastCalibratedBand * 100) << " %: models other than the references "
      << "were off by as much)\n";
  return 0;
}

// Measures this machine's rates (python/footprint/calibrate.py), fits the overhead per call on
// its reference models and stores the calibration as a run; an interrupted or failed one
// stores nothing.
Result<int> Calibrate(const PredictOptions& o, std::ostream& out) {
  std::string folder = (std::filesystem::temp_directory_path() / "footprint-calibrate-XXXXXX");
  if (::mkdtemp(folder.data()) == nullptr) return IoError("cannot make a temporary folder");
  struct Removed {
    std::string path;
    ~Removed() { std::filesystem::remove_all(path); }
  } removed{folder};
  const std::string result = folder + "/calibration.json";
  // -P: `python -m` puts the current folder first on sys.path, so a folder named footprint
  // there (a checkout, a build's python/) would run its calibrate.py instead of this one's.
  std::vector<std::string> argv = {kCalibrationPython,       "-P",   "-m",
                                   "footprint.calibrate",    result, "--threads",
                                   std::to_string(o.threads)};
  if (o.quick) argv.push_back("--quick");
  rusage before{}, after{};
  ::getrusage(RUSAGE_CHILDREN, &before);
  Env& env = Env::Default();
  const int64_t started_ns = env.MonotonicNs();
  const int status = RunCalibrationScript(argv);
  const double wall_s = static_cast<double>(env.MonotonicNs() - started_ns) / 1e9;
  ::getrusage(RUSAGE_CHILDREN, &after);
  if (status == 128 + SIGINT || status == 128 + SIGTERM) {
    std::cerr << "footprint predict: the calibration was interrupted: nothing was stored "
                 "(footprint predict --calibrate measures again)\n";
    return status;
  }
  Result<json> record = ReadJsonFile(result, "the calibration", env);
  if (!record.ok()) {
    return InternalError(kCalibrationPython + std::string(" -m footprint.calibrate exited ") +
                         std::to_string(status) + " without a result: nothing was stored");
  }
  if (const std::string error = Text(*record, "error", ""); !error.empty()) {
    return InvalidArgument(error + "; nothing was stored");
  }
  FP_RETURN_IF_ERROR(FitCalibration(*record));
  const double user_s = Seconds(after.ru_utime) - Seconds(before.ru_utime);
  const double system_s = Seconds(after.ru_stime) - Seconds(before.ru_stime);
  (*record)["cpu_s"] = user_s + system_s;  // the interpreter's start and imports included
  (*record)["wall_s"] = wall_s;
  FP_ASSIGN_OR_RETURN(auto store, OpenStore(o.db));
  argv[4] = "OUT.json";  // the folder is gone once stored
  FP_ASSIGN_OR_RETURN(const std::string run,
                      StoreCalibration(*store, *record, argv, user_s, system_s));
  return ReportCalibration(*record, run, store->location(), o.json, out);
}

// How sure a prediction is: on the predictor's machine, within its band over held-out
// families (FamilyBandError), widened by the model's novelty (novelty.h); elsewhere, within
// kOtherMachineFactor; with operators that have no cost formula, a lower bound without a band.
struct Confidence {
  bool other_machine = false;
  int without_formula = 0;           // operators
  std::string calibration;           // the run of this machine's calibration the latency comes from
  double novelty = 0, widening = 0;  // novelty.h; widening 0: the band is not widened
};

json Interval(double value, double p80, const Confidence& c) {
  if (c.without_formula > 0) {
    return {{"value", value},
            {"lower_bound", true},
            {"uncertainty", "a lower bound: " + std::to_string(c.without_formula) +
                                " operator(s) without a cost formula"}};
  }
  const double own = BandFactor(p80, c.widening, c.novelty);
  const double factor = c.other_machine ? std::max(own, kOtherMachineFactor) : own;
  char within[160];
  if (!c.calibration.empty()) {
    std::snprintf(within, sizeof within,
                  "calibrated on this machine (run %.8s): within %ld %%, the calibration's band",
                  c.calibration.c_str(), std::lround(p80 * 100));
  } else if (c.other_machine) {
    std::snprintf(within, sizeof within,
                  "fitted on another or an unrecorded machine: widened to a factor %.1f", factor);
  } else {
    std::snprintf(within, sizeof within,
                  "80 %% of held-out families had every prediction within %ld %%",
                  std::lround(p80 * 100));
  }
  std::string why = within;
  if (c.widening * c.novelty >= 0.01 && own >= factor) {
    char widened[120];
    std::snprintf(widened, sizeof widened,
                  ", widened by %.2fx for a novelty of %.2f (how far the model is from the "
                  "training set)",
                  1 + c.widening * c.novelty, c.novelty);
    why += widened;
  }
  return {
      {"value", value}, {"low", value / factor}, {"high", value * factor}, {"uncertainty", why}};
}

// "measured with 1 thread, ": what a CPU predictor's latencies hold for, where its training
// set recorded it (on a GPU, the CPU threads that launch the kernels matter less).
std::string ThreadsMeasured(const json& training_set) {
  const json threads = Member(training_set, "threads");
  if (Text(training_set, "measured_on", "cpu") != "cpu" || !threads.is_array() || threads.empty()) {
    return "";
  }
  std::string counts;
  for (const json& t : threads) {
    if (!t.is_number_integer()) return "";
    counts += (counts.empty() ? "" : " or ") + std::to_string(t.get<int>());
  }
  return "measured with " + counts + (counts == "1" ? " thread, " : " threads, ");
}

// The answer for people: the graph, then each prediction with its interval or why there is
// none.
void PrintAnswer(const ModelGraph& g, const json& a, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line, "%zu operators, %.2f GMACs (%.2f GFLOPs), ", g.ops.size(),
                g.macs / 1e9, g.flops / 1e9);
  out << "footprint predict: " << Inert(g.name) << " (sha256 " << g.sha256.substr(0, 12)
      << "…) at batch " << g.batch << ": " << line << FormatBytes(g.param_bytes)
      << " of parameters, " << FormatBytes(g.peak_activation_bytes) << " of live activations at "
      << "most\n";
  for (const json& assumption : a["assumptions"]) {
    out << "footprint predict: assumed: " << Inert(assumption.get<std::string>()) << "\n";
  }
  auto interval = [&](const char* what, const json& v, auto format) {
    out << "footprint predict: " << what << " ";
    if (!v.is_object()) {
      out << "not predicted\n";
      return;
    }
    out << (v.contains("lower_bound") ? "at least " : "") << format(v["value"].get<double>());
    if (v.contains("low")) {
      out << " (" << format(v["low"].get<double>()) << " to " << format(v["high"].get<double>())
          << ": " << v.value("uncertainty", std::string()) << ")";
    } else if (v.contains("uncertainty")) {
      out << " (" << v["uncertainty"].get<std::string>() << ")";
    }
    out << "\n";
  };
  interval("latency", a["latency_s"], [](double s) { return FormatDuration(s); });
  if (a.contains("latency_reason"))
    out << "footprint predict:   " << a["latency_reason"].get<std::string>() << "\n";
  interval("peak memory", a["peak_memory_bytes"], [](double b) { return FormatBytes(b); });
  if (a["energy_j"].is_object()) {
    interval("energy per query", a["energy_j"], [](double j) {
      char text[32];
      std::snprintf(text, sizeof text, "%.3g J", j);
      return std::string(text);
    });
  } else {
    out << "footprint predict: energy not predicted: " << a.value("energy_reason", std::string())
        << "\n";
  }
  if (a["mig_profile"].is_object()) {
    out << "footprint predict: MIG profile " << a["mig_profile"]["name"].get<std::string>()
        << " on " << a["device"].get<std::string>() << " ("
        << a["mig_profile"]["compute_slices"].get<int>() << " of 7 compute slices, with a "
        << a["mig_profile"]["margin"].get<double>() * 100 << " % margin)\n";
  }
  if (a["predictor"].is_object()) {
    out << "footprint predict: predictor " << a["predictor"]["latency"].get<std::string>()
        << " (version " << a["predictor"]["version"].get<int>() << ", "
        << ThreadsMeasured(Object(a["predictor"], "training_set"))
        << a["predictor"]["file"].get<std::string>() << ")\n";
  }
}

// The GPU's memory without measurements on it: the weights and the peak of live activations,
// said as an assumption; latency and energy are not predicted.
void PredictFromGraphAlone(const ModelGraph& g, const MigGpu& gpu, json& answer) {
  answer["latency_s"] = nullptr;
  answer["latency_reason"] = "footprint has no measurements on " + std::string(gpu.name) +
                             " (footprint predict --train, on a dataset measured there)";
  answer["peak_memory_bytes"] = {{"value", g.param_bytes + g.peak_activation_bytes}};
  answer["energy_j"] = nullptr;
  answer["energy_reason"] = "no energy measurements on " + std::string(gpu.name);
  answer["assumptions"].push_back(
      "GPU memory = weights + peak live activations; the framework's context and workspace "
      "are not included");
}

// The model's novelty against the predictor's training rows (novelty.h) into answer["novelty"]
// and `c`, which widens the latency band by it; null for a file trained before footprint had
// novelty (its band is not widened). InvalidArgument for a widening out of its range.
Status ReadNovelty(const json& file, const std::map<std::string, double>& features, Confidence& c,
                   json& answer) {
  const json section = Object(file, "novelty");
  answer["novelty"] = nullptr;
  if (section.empty()) return Status::Ok();
  const double widening = Number(section, "widening", -1);
  if (!(widening >= 0 && widening <= kMaxWidening)) {
    return InvalidArgument("the predictor's novelty.widening is not a number from 0 to " +
                           std::to_string(static_cast<int>(kMaxWidening)) +
                           ": train it again with footprint predict --train");
  }
  const auto rows = Member(section, "rows").get<std::vector<Mix>>();
  c.novelty = Novelty(MixOf(features), rows);
  c.widening = widening;
  answer["novelty"] = {{"value", c.novelty},
                       {"widening", widening},
                       {"band_factor", 1 + widening * c.novelty},
                       {"training_rows", rows.size()}};
  return Status::Ok();
}

// Latency, peak memory and energy from a predictor file for this device. Peak memory comes from
// the weights and the live activations: neither an operator without a formula nor the CPU
// changes it, so it keeps the predictor's own band.
Status PredictFromFile(const json& file, const std::map<std::string, double>& features,
                       Confidence confidence, json& answer) {
  FP_RETURN_IF_ERROR(ReadNovelty(file, features, confidence, answer));
  // A file of another version or edited by hand is refused by FromJson with one line.
  auto predict = [&](const char* target, const Confidence& c) -> Result<json> {
    const json section = Object(file, target);
    FP_ASSIGN_OR_RETURN(auto p, FromJson(Object(section, "predictor")));
    // Without its error there is no interval to give: never a silent one of zero width.
    const json p80 = Member(Object(section, "held_out_families"), "p80_relative_error");
    if (!p80.is_number()) {
      return InvalidArgument(std::string("the predictor's ") + target +
                             " has no held_out_families.p80_relative_error (its error on "
                             "held-out families): train it again with footprint predict --train");
    }
    return Interval(p->Predict(features), p80.get<double>(), c);
  };
  FP_ASSIGN_OR_RETURN(answer["latency_s"], predict("latency", confidence));
  FP_ASSIGN_OR_RETURN(answer["peak_memory_bytes"], predict("peak_memory", Confidence{}));
  answer["predictor"]["latency"] = Text(Object(Object(file, "latency"), "predictor"), "kind", "");
  answer["predictor"]["error_on_held_out_families"] =
      Object(Object(file, "latency"), "held_out_families");
  if (file.contains("energy")) {
    confidence.widening = 0;  // fitted on latency's errors
    FP_ASSIGN_OR_RETURN(answer["energy_j"], predict("energy", confidence));
  } else {
    answer["energy_j"] = nullptr;
    answer["energy_reason"] =
        "the predictor was trained where no energy counter was readable "
        "(RAPL on a CPU, NVML on a GPU)";
  }
  return Status::Ok();
}

// "Swoosh x2, TopK x1": the operator types without a cost formula, counted; `count` their sum.
std::string WithoutFormula(const ModelGraph& g, int& count) {
  std::string types;
  count = 0;
  for (const auto& [type, n] : g.unknown_ops) {
    types += (types.empty() ? "" : ", ") + Inert(type) + " x" + std::to_string(n);
    count += n;
  }
  return types;
}

// The CPU predictor's machine against this one, into answer["machine"]; the warning where they
// differ or the predictor does not record its machine (empty where they match).
std::string CheckMachine(const json& file, json& answer, Env& env) {
  const json recorded = Object(file, "machine");
  const json here = ThisMachine(Text(Object(recorded, "blas"), "library", ""), env);
  const MachineVerdict verdict = CompareMachines(recorded, here);
  answer["machine"] = {{"fitted_on", recorded},
                       {"here", here},
                       {"matches", verdict.matches()},
                       {"differences", verdict.differences}};
  if (verdict.matches()) return "";
  std::string what;
  for (const std::string& d : verdict.differences) what += (what.empty() ? "" : "; ") + d;
  char factor[16];
  std::snprintf(factor, sizeof factor, "%.1f", kOtherMachineFactor);
  return std::string("the predictor was fitted on ") +
         (verdict.recorded ? "another machine (" + Inert(what) + ")" : "an unrecorded machine") +
         ": its latency band is widened to a factor " + factor +
         " either side; measure this machine's rates with footprint predict --calibrate (a few "
         "minutes)";
}

// The answer from a predictor, or for a GPU footprint ships none, from the graph alone; the
// warnings said in it.
Status Answer(const PredictOptions& o, const ModelGraph& g, const MigGpu* gpu, json& answer) {
  const std::string device = gpu ? std::string(gpu->name) : "cpu";
  Env& env = Env::Default();  // the caller is the command line
  const std::string path =
      o.predictor.empty()
          ? DefaultPredictor(device, {FOOTPRINT_INSTALLED_PREDICTORS, FOOTPRINT_SOURCE_PREDICTORS},
                             env)
          : o.predictor;
  if (path.empty() && gpu == nullptr) {
    return NotFound(
        "no predictor for cpu was found (installed in share/footprint/predict, or the source "
        "tree's data/predict): pass --predictor FILE, or train one with --train");
  }
  Confidence confidence;
  const std::string types = WithoutFormula(g, confidence.without_formula);
  answer["lower_bound"] = confidence.without_formula > 0;
  if (confidence.without_formula > 0) {
    answer["warnings"].push_back(
        std::to_string(confidence.without_formula) + " operator(s) without a cost formula (" +
        types + "), each counted as one operation per output element: latency and energy are " +
        "lower bounds, without a band");
  }
  if (path.empty()) {
    answer["predictor"] = nullptr;
    PredictFromGraphAlone(g, *gpu, answer);
    return Status::Ok();
  }
  FP_ASSIGN_OR_RETURN(const json file, ReadPredictor(path, device, env));
  std::optional<Calibration> calibration;
  if (gpu == nullptr) {
    const std::string warning = CheckMachine(file, answer, env);
    FP_ASSIGN_OR_RETURN(calibration, NewestCalibration(o.db, answer["machine"]["here"]));
    confidence.other_machine = !warning.empty() && !calibration;
    if (confidence.other_machine) answer["warnings"].push_back(warning);
  }
  answer["predictor"] = {{"version", static_cast<int>(Number(file, "version", 0))},
                         {"file", path},
                         {"training_set", Object(file, "training_set")}};
  FP_RETURN_IF_ERROR(PredictFromFile(file, Features(g), confidence, answer));
  answer["calibrated"] = nullptr;
  answer["calibration_gaps"] = nullptr;
  if (calibration) {
    // This machine's rates replace the predictor's fitted ones: the band is the calibration's,
    // not widened by novelty (fitted on the predictor's errors, not the calibration's).
    confidence.calibration = calibration->run_id;
    answer["calibrated"] = calibration->run_id;
    answer["latency_s"] = Interval(CalibratedLatency(g, calibration->record),
                                   Number(calibration->record, "band", 0), confidence);
    answer["predictor"]["latency"] = "calibrated roofline";
    // Said on every call where the calibration's references do not check the prediction.
    answer["calibration_gaps"] = CalibrationGaps(g, calibration->record);
    for (const json& gap : answer["calibration_gaps"]) {
      answer["warnings"].push_back("the calibration does not cover this prediction: " +
                                   gap.get<std::string>());
    }
  }
  return Status::Ok();
}

// The smallest MIG profile of `gpu` that holds the predicted memory with `margin`; null on a
// CPU or where none does.
json MigProfile(const MigGpu* gpu, const json& answer, double margin) {
  if (gpu == nullptr) return nullptr;
  const auto profile =
      SmallestFittingProfile(*gpu, answer["peak_memory_bytes"]["value"].get<double>(), margin);
  if (!profile) return nullptr;
  return {{"name", profile->name},
          {"compute_slices", profile->compute_slices},
          {"memory_gib", gpu->profile_gib(*profile)},
          {"margin", margin}};
}

Result<int> Predict(const PredictOptions& o, std::ostream& out) {
  const MigGpu* gpu = o.device == "cpu" ? nullptr : FindMigGpu(o.device);
  if (o.device != "cpu" && gpu == nullptr) {
    return InvalidArgument("--device " + o.device +
                           ": use cpu or a GPU with a MIG table (A100-40GB, A100-80GB, "
                           "H100-80GB, H200-141GB)");
  }
  FP_ASSIGN_OR_RETURN(ModelGraph g, AnalyzeOnnx(o.model, o.batch));
  if (o.features) {
    json j = GraphJson(g);
    j["features"] = Features(g);
    j["assumptions"] = g.assumptions;
    out << j.dump(o.json ? -1 : 1) << "\n";
    return 0;
  }
  int without_formula = 0;
  if (const std::string types = WithoutFormula(g, without_formula);
      without_formula == static_cast<int>(g.ops.size())) {
    return InvalidArgument(o.model + ": none of its " + std::to_string(without_formula) +
                           " operators has a cost formula (" + types +
                           "): there is nothing to predict from (footprint predict --features "
                           "shows what was read)");
  }
  json answer = {{"model", GraphJson(g)},
                 {"device", gpu ? std::string(gpu->name) : "cpu"},
                 {"assumptions", g.assumptions},
                 {"warnings", json::array()}};
  FP_RETURN_IF_ERROR(Answer(o, g, gpu, answer));
  // Said on every call, on stderr: --json keeps stdout to its one line.
  for (const json& warning : answer["warnings"]) {
    std::cerr << "footprint predict: warning: " << warning.get<std::string>() << "\n";
  }
  answer["mig_profile"] = MigProfile(gpu, answer, o.margin);
  if (o.json) {
    out << answer.dump() << "\n";
    return 0;
  }
  PrintAnswer(g, answer, out);
  return 0;
}

}  // namespace
}  // namespace footprint::predict

extern "C" __attribute__((visibility("default"))) footprint::Result<int> footprint_predict_entry(
    const footprint::predict::PredictOptions& options, std::ostream& out) {
  using namespace footprint::predict;
  // A predictor or dataset edited by hand (a string where a number belongs, NaN written as null)
  // is one line, not a crash.
  try {
    if (options.calibrate) return Calibrate(options, out);
    if (!options.train.empty()) return Train(options, out);
    if (!options.evaluate.empty()) return Evaluate(options, out);
    return Predict(options, out);
  } catch (const nlohmann::json::exception& e) {
    return footprint::InvalidArgument(
        std::string("a predictor file or the runs' records hold a value of the wrong kind: ") +
        e.what());
  }
}
