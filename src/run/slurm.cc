#include "run/slurm.h"

#include <charconv>
#include <string_view>
#include <utility>

#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;

// A variable's value as a number when it is one (SLURM_NODEID=0), else as text
// (SLURM_TASKS_PER_NODE=2(x2)).
json Value(const std::string& text) {
  int64_t n = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, n);
  if (ec == std::errc() && ptr == end && !text.empty()) return n;
  return text;
}

}  // namespace

json SlurmJob(Env& env) {
  return SlurmJob([&](std::string_view name) { return env.Var(name).value_or(""); });
}

json SlurmJob(const std::function<std::string(std::string_view)>& var) {
  std::string job = var("SLURM_JOB_ID");
  if (job.empty()) job = var("SLURM_JOBID");  // older releases
  if (job.empty()) return nullptr;
  // The first variable of each field that is set; a step's own before its job's.
  static constexpr std::pair<const char*, std::string_view> kFields[] = {
      {"step_id", "SLURM_STEP_ID"},
      {"cluster", "SLURM_CLUSTER_NAME"},
      {"partition", "SLURM_JOB_PARTITION"},
      {"nodes", "SLURM_STEP_NODELIST"},
      {"nodes", "SLURM_JOB_NODELIST"},
      {"num_nodes", "SLURM_STEP_NUM_NODES"},
      {"num_nodes", "SLURM_JOB_NUM_NODES"},
      {"node", "SLURMD_NODENAME"},
      {"node_id", "SLURM_NODEID"},
      {"tasks", "SLURM_STEP_NUM_TASKS"},
      {"tasks", "SLURM_NTASKS"},
      {"tasks_per_node", "SLURM_STEP_TASKS_PER_NODE"},
      {"tasks_per_node", "SLURM_TASKS_PER_NODE"},
      {"task", "SLURM_PROCID"},
      {"local_task", "SLURM_LOCALID"},
      {"cpus_on_node", "SLURM_CPUS_ON_NODE"},
      {"gpus", "SLURM_STEP_GPUS"},
      {"gpus", "SLURM_JOB_GPUS"},
  };
  json out = {{"job_id", Value(job)}};
  for (const auto& [field, name] : kFields) {
    if (out.contains(field)) continue;
    if (std::string value = var(name); !value.empty()) out[field] = Value(value);
  }
  if (!out.contains("step_id")) out["step_id"] = "batch";
  if (out.contains("gpus")) {  // "0,1": the GPU indices bound to the step, as a list
    const std::string gpus =
        out["gpus"].is_string() ? out["gpus"].get<std::string>() : out["gpus"].dump();
    json list = json::array();
    for (std::string_view g : Split(gpus, ',')) list.push_back(Value(std::string(g)));
    out["gpus"] = list;
  }
  return out;
}

std::string SlurmJobText(const json& slurm) {
  auto text = [&](const char* key) {
    const json& v = slurm.value(key, json());
    return v.is_string() ? v.get<std::string>() : v.is_null() ? std::string("?") : v.dump();
  };
  std::string line = "job " + text("job_id") + " step " + text("step_id");
  if (slurm.contains("task")) {
    line += ", task " + text("task") + (slurm.contains("tasks") ? " of " + text("tasks") : "");
  }
  if (slurm.contains("node")) line += " on " + text("node");
  if (slurm.contains("node_id")) {
    line += " (node " + text("node_id") +
            (slurm.contains("num_nodes") ? " of " + text("num_nodes") : "") + ")";
  }
  if (slurm.contains("gpus")) line += ", gpus " + text("gpus");
  return line;
}

}  // namespace footprint
