// The rows the predictors are fitted and evaluated on (predictors.h), from either source:
//   DATA.csv     a dataset of scripts/predict-dataset (ReadDataset);
//   a database   any footprint store (a file or a postgresql:// URI): its `footprint evaluate`
//                runs of the single- and multi-stream scenarios whose manifest names the model
//                as ONNX (model.graph), one row per run: the graph's features at the run's
//                samples per query, the p50 latency, the peak memory (the process tree's GPU
//                memory on a GPU, the run's peak otherwise) and the energy per query over the
//                load window where a counter had it (the GPU's, or RAPL's on a CPU).
// So users fit predictors on their own hardware from their own runs.
//
// Thread-safety: reads files and a store; nothing shared.
#ifndef FOOTPRINT_PREDICT_TRAINING_DATA_H_
#define FOOTPRINT_PREDICT_TRAINING_DATA_H_

#include <string>
#include <vector>

#include "footprint/status.h"
#include "predict/predictors.h"

namespace footprint::predict {

struct TrainingData {
  std::vector<Row> rows;
  // Runs of evaluations that could have been rows and were left out: "RUN: why" (no
  // model.graph, a graph that is gone or changed since the run, a run that did not end ok).
  std::vector<std::string> left_out;
};

// NotFound / InvalidArgument / kDatabase, one line, when the source cannot be read.
Result<TrainingData> ReadTrainingData(const std::string& source);

}  // namespace footprint::predict

#endif  // FOOTPRINT_PREDICT_TRAINING_DATA_H_
