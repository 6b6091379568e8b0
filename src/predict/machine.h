// The CPU machine a predictor was fitted on, and this one. A CPU predictor's rates are those of
// the machine, the BLAS kernel and the threads its rows were measured with: on another CPU, or
// with OpenBLAS on another kernel (OPENBLAS_CORETYPE, another build), the same model runs up to
// 17x slower or faster. `--train` records the machine its rows share (MachineOfRows); `predict`
// compares it with this machine (ThisMachine) and says what differs (CompareMachines).
//
// A record: {"cpu_model": "AMD EPYC", "isa": ["avx2", "fma", ...], "cores": 2, "threads": 1,
//            "blas": {"library": PATH, "kernel": "Haswell", "threads": 1}}, each member present
// only where every row recorded the same value.
//
// Thread-safety: ThisMachine reads /proc and loads the BLAS library (through its Env); the rest
// is pure.
#ifndef FOOTPRINT_PREDICT_MACHINE_H_
#define FOOTPRINT_PREDICT_MACHINE_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "footprint/env.h"
#include "predict/predictors.h"

namespace footprint::predict {

// The ISA flags of /proc/cpuinfo that decide which kernels a BLAS or a framework runs.
inline constexpr const char* kIsaFlags[] = {"sse4_2",   "avx",      "avx2",        "fma",
                                            "avx512f",  "avx512bw", "avx512_vnni", "avx512_bf16",
                                            "amx_tile", "asimd",    "sve"};

// The machine every row shares (a member where all rows agree on it); an empty object when the
// rows recorded none.
nlohmann::json MachineOfRows(const std::vector<Row>& rows);

// This machine as a record: the CPU's model and ISA flags (of kIsaFlags, from `env`'s
// /proc/cpuinfo), its cores (those this process may run on), and where `blas_library` (else
// libopenblas.so.0) loads through `env` and is OpenBLAS, its kernel (openblas_get_corename,
// which follows OPENBLAS_CORETYPE) and threads; "blas" is null where none loads.
nlohmann::json ThisMachine(const std::string& blas_library, Env& env = Env::Default());

struct MachineVerdict {
  bool recorded = false;                 // the predictor names its CPU model
  std::vector<std::string> differences;  // one phrase each: "CPU AMD EPYC there, Intel ... here"
  bool matches() const { return recorded && differences.empty(); }
};
// What differs between `recorded` (a predictor's record) and `here`: the CPU model, the ISA
// flags, the BLAS kernel (where both name one), and threads beyond this machine's cores.
MachineVerdict CompareMachines(const nlohmann::json& recorded, const nlohmann::json& here);

}  // namespace footprint::predict

#endif  // FOOTPRINT_PREDICT_MACHINE_H_
