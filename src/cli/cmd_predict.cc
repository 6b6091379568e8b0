// footprint predict: a model's footprint before it runs, from its ONNX graph (src/predict/,
// docs/prediction.md), through the predict module (cli/modules.h).
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "cli/cli.h"
#include "cli/modules.h"
#include "predict/module.h"
#include "util/strings.h"

namespace footprint::cli {
namespace {

// --batch as typed: a whole number from 1 to kMaxBatch. Read as text because CLI11's own
// conversion turns 99999999999999999999 into int64's largest without a word.
Result<int64_t> ParseBatch(const std::string& text) {
  const std::optional<int64_t> batch = ParseInt(text);
  if (batch && *batch >= 1 && *batch <= predict::kMaxBatch) return *batch;
  return InvalidArgument("--batch " + QuotedInert(text) + ": give a whole number from 1 to " +
                         std::to_string(predict::kMaxBatch));
}

// --margin as typed: a share from 0 to kMaxMargin (nan and inf are no share).
Result<double> ParseMargin(const std::string& text) {
  const std::optional<double> margin = ParseDouble(text);
  if (margin && *margin >= 0 && *margin <= predict::kMaxMargin) return *margin;
  return InvalidArgument(
      "--margin " + QuotedInert(text) + ": give a share of the predicted memory from 0 to " +
      std::to_string(static_cast<int>(predict::kMaxMargin)) + " (0.1 adds 10 %)");
}

// What to predict, for which device, with which predictor.
void AddPredictionOptions(CLI::App& cmd, predict::PredictOptions& o, std::string& batch) {
  cmd.add_option("MODEL", o.model, "the model, an ONNX file");
  cmd.add_option("--batch", batch,
                 "the batch size (the inputs' first dimension), 1 to 1048576; needed when it "
                 "is dynamic")
      ->option_text("N");
  cmd.add_option("--device", o.device,
                 "cpu (default), or a GPU with a MIG table: A100-40GB, A100-80GB, H100-80GB, "
                 "H200-141GB (latency and energy where a predictor was trained there: the "
                 "H100 and the H200 ship one; else memory and MIG profile only)")
      ->option_text("NAME");
  cmd.add_flag("--json", o.json, "one line of JSON");
  cmd.add_flag("--features", o.features, "print the graph's features; predict nothing");
  cmd.add_option("--predictor", o.predictor,
                 "a predictor file (default: the one shipped for --device, trained on this "
                 "project's measurements; FOOTPRINT_PREDICTOR names another); one trained on "
                 "another device is refused; a CPU predictor fitted on another machine (CPU, "
                 "ISA, BLAS kernel, threads) or an unrecorded one is used with a warning on "
                 "every call and its latency band widened to a factor 5.3, unless this machine is "
                 "calibrated (--calibrate)")
      ->option_text("FILE");
}

// Training, evaluating and calibrating the predictors, and the MIG profile's margin.
void AddPredictorWorkOptions(CLI::App& cmd, predict::PredictOptions& o, std::string& margin) {
  cmd.add_option("--train", o.train,
                 "fit the predictors on a dataset (scripts/predict-dataset) or on a footprint "
                 "database's evaluate runs whose manifest names the model's ONNX graph "
                 "(model.graph), and write the best to --out")
      ->option_text("DATA.csv|DB");
  cmd.add_option("--out", o.out, "with --train: the predictor file to write")->option_text("FILE");
  cmd.add_option("--evaluate", o.evaluate,
                 "every predictor on a dataset or database: leave-one-family-out, a random "
                 "split, the held-out families")
      ->option_text("DATA.csv|DB");
  cmd.add_flag("--calibrate", o.calibrate,
               "measure this machine's rates (GEMMs and convolutions over their rows, weight "
               "streaming, attention, softmax, layer norm, depthwise bandwidth, max and average "
               "pooling, element-wise and "
               "batch-norm bandwidth over the tensor's size, the cost of an operator call) and "
               "time three reference models through PyTorch (/usr/bin/python3, python3-torch), "
               "in under a minute on 2 cores; stored as a run named predict-calibration in --db. "
               "A CPU prediction then uses the newest calibration of this machine (CPU, ISA, "
               "BLAS kernel), whatever the predictor was fitted on, with the references' worst "
               "error as its band (\"calibrated\": the run). Ctrl-C, or SIGINT or SIGTERM to "
               "footprint alone, stops it and stores nothing");
  cmd.add_flag("--quick", o.quick,
               "with --calibrate: shorter repetitions and small references (seconds; for "
               "tests, its band is wider)");
  cmd.add_option("--threads", o.threads,
                 "with --calibrate: the framework's threads (OpenBLAS pinned to them), "
                 "default 1, as the shipped predictor was measured")
      ->check(CLI::Range(1, predict::kMaxCalibrationThreads))
      ->option_text("N");
  AddDbOption(cmd, o.db);
  cmd.add_option("--margin", margin,
                 "on predicted memory for the MIG profile, 0 to 10 (default 0.1: 10 %)")
      ->option_text("SHARE");
}

// footprint predict once its options are parsed: checked, then handed to the module.
int RunPredictCommand(predict::PredictOptions& o, const std::string& batch,
                      const std::string& margin, const CLI::App& cmd) {
  if (cmd.count("--batch")) {
    Result<int64_t> parsed = ParseBatch(batch);
    if (!parsed.ok()) return Fail(parsed.status());
    o.batch = *parsed;
  }
  if (cmd.count("--margin")) {
    Result<double> parsed = ParseMargin(margin);
    if (!parsed.ok()) return Fail(parsed.status());
    o.margin = *parsed;
  }
  if (o.model.empty() && o.train.empty() && o.evaluate.empty() && !o.calibrate) {
    Fail(InvalidArgument(
        "predict needs MODEL.onnx (or --calibrate, or --train/--evaluate DATA.csv|DB); see "
        "footprint predict --help"));
    return kExitUsage;
  }
  auto loaded = LoadModuleEntry(predict::kModuleFile, predict::kEntrySymbol,
                                "FOOTPRINT_PREDICT_MODULE", "predict");
  if (!loaded.ok()) {
    Fail(loaded.status());
    return kExitRunFailed;
  }
  Result<int> status = reinterpret_cast<predict::Entry>(*loaded)(o, std::cout);
  return status.ok() ? *status : FailOnInputs(status.status(), kExitError);
}

}  // namespace

Action AddPredict(CLI::App& app) {
  auto o = std::make_shared<predict::PredictOptions>();
  auto batch = std::make_shared<std::string>();
  auto margin = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "predict",
      "Predict a model's latency, peak memory and (where measured) energy from its ONNX graph "
      "before it runs (per operator FLOPs, bytes and parameters, fitted on footprint's own "
      "measurements), and the smallest MIG profile that holds it on a GPU; or train and "
      "evaluate the predictors.");
  AddPredictionOptions(*cmd, *o, *batch);
  AddPredictorWorkOptions(*cmd, *o, *margin);
  cmd->footer(
      "The latency band is the predictor's error on families it was not fitted on, widened by "
      "the model's novelty: how far its mix of work (FLOP and byte shares per operator kind) "
      "is from the training rows (\"novelty\" in --json). An operator without a cost formula "
      "makes latency and energy lower bounds, without a band (\"lower_bound\": true, and a "
      "warning naming the operators).\n\n"
      "Exit status: 0; 2 for a model that cannot be read or analyzed (not ONNX, not a regular "
      "file or over 2 GiB, an attribute or a dimension ONNX's shape inference cannot take, a "
      "dynamic batch without --batch, a graph none of whose operators has a cost formula), a "
      "predictor of another device or version, or bad options; 125 "
      "when the predict module cannot be loaded; 128+N for a calibration stopped by signal N "
      "(130: Ctrl-C; nothing stored).\n\n"
      "Examples:\n"
      "  footprint predict resnet50.onnx --batch 8\n"
      "  footprint predict model.onnx --batch 1 --device H200-141GB --json\n"
      "  footprint predict --train data.csv --out my-predictor.json\n"
      "  footprint predict --train footprint.db --out my-predictor.json\n"
      "  footprint predict model.onnx --batch 4 --predictor my-predictor.json\n"
      "  footprint predict --calibrate && footprint predict model.onnx --batch 4");
  return [o, batch, margin, cmd]() -> int { return RunPredictCommand(*o, *batch, *margin, *cmd); };
}

}  // namespace footprint::cli
