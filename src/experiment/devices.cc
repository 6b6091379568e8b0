// Devices and collocation (MPS, MIG) around a workload's runs.
#include "experiment/devices.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <set>

#include "footprint/profiler.h"
#include "probe/gpu_devices.h"
#include "probe/nvml.h"
#include "run/run_metadata.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace footprint::experiment {
namespace {

constexpr const char* kMpsControl = "nvidia-cuda-mps-control";
constexpr const char* kNvidiaSmi = "nvidia-smi";

std::string Joined(const std::vector<std::string>& words, const std::string& sep) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : sep) + w;
  return out;
}

// The GPU inventory, read now (MIG devices appear and vanish as instances are made).
Result<std::vector<GpuEntity>> Inventory() {
  FP_ASSIGN_OR_RETURN(auto lib, nvml::Library::Open(Env::Default()));
  return ListGpus(*lib);
}

// The whole GPU or MIG device a plan's device names: an NVML index or a (prefix of a) UUID.
Result<const GpuEntity*> FindDevice(const std::vector<GpuEntity>& gpus, const std::string& dev) {
  auto index = ParseInt(dev);
  const GpuEntity* found = nullptr;
  for (const GpuEntity& g : gpus) {
    bool match = index ? !g.is_mig() && g.index == static_cast<unsigned>(*index)
                       : !g.uuid.empty() && g.uuid.starts_with(dev);
    if (match) {
      if (found != nullptr) return InvalidArgument("device '" + dev + "' is ambiguous");
      found = &g;
    }
  }
  if (found == nullptr) {
    return NotFound("there is no GPU '" + dev + "' here (" + std::to_string(gpus.size()) +
                    " device(s) found; footprint doctor lists them)");
  }
  return found;
}

// "Successfully created GPU instance ID  1 on GPU  0 ..." -> 1.
std::optional<unsigned> IdAfter(const std::string& text, const std::string& label) {
  size_t p = text.find(label);
  if (p == std::string::npos) return std::nullopt;
  auto id = ParseInt(Split(Trim(std::string_view(text).substr(p + label.size())), ' ')[0]);
  if (!id || *id < 0) return std::nullopt;
  return static_cast<unsigned>(*id);
}

}  // namespace

bool UsesGpu(const PlannedRun& run) {
  return !run.devices.empty() || run.collocation.mode != Collocation::Mode::kNone;
}

Status CheckPlanDevices(const ExperimentPlan& plan) {
  std::optional<std::vector<GpuEntity>> gpus;
  for (const auto& w : plan.workloads) {
    for (const auto& r : w.runs) {
      if (!UsesGpu(r)) continue;
      auto refuse = [&](const std::string& why) {
        return Unsupported("run " + r.key + " needs a GPU but " + why +
                           "; run the plan on a machine with an NVIDIA GPU (footprint "
                           "experiment --dry-run shows it here), or on the CPU with --devices "
                           "cpu");
      };
      if (r.devices.empty()) return refuse("names no Devices for its collocation");
      if (!gpus) {
        auto inv = Inventory();
        if (!inv.ok()) return refuse(inv.status().message());
        gpus = std::move(inv).value();
      }
      for (const auto& d : r.devices) {
        if (auto dev = FindDevice(*gpus, d); !dev.ok()) return refuse(dev.status().message());
      }
      if (r.collocation.mode == Collocation::Mode::kMps &&
          !FindOnPath(Env::Default(), kMpsControl)) {
        return refuse(std::string(kMpsControl) + " is not on PATH");
      }
      if (r.collocation.mode == Collocation::Mode::kMig &&
          !FindOnPath(Env::Default(), kNvidiaSmi)) {
        return refuse(std::string(kNvidiaSmi) + " is not on PATH");
      }
    }
  }
  return Status::Ok();
}

namespace {

using RunEnvs = std::vector<std::map<std::string, std::string>>;
using UndoSteps = std::vector<std::function<void()>>;

// MPS: one daemon for the workload's runs that ask for it (`devices`: each run's), its pipes
// in a private folder, and their variables in `envs`.
Status StartMps(const std::vector<const PlannedRun*>& runs,
                const std::vector<std::vector<const GpuEntity*>>& devices, RunEnvs& envs,
                UndoSteps& undo) {
  std::set<std::string> mps_uuids;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i]->collocation.mode != Collocation::Mode::kMps) continue;
    for (const GpuEntity* g : devices[i]) mps_uuids.insert(g->uuid);
  }
  if (mps_uuids.empty()) return Status::Ok();
  char tmpl[] = "/tmp/footprint-mps-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return IoError("cannot create a folder for the MPS pipes");
  const std::string dir = tmpl;
  std::map<std::string, std::string> env = {
      {"CUDA_VISIBLE_DEVICES", Joined({mps_uuids.begin(), mps_uuids.end()}, ",")},
      {"CUDA_MPS_PIPE_DIRECTORY", dir + "/pipe"},
      {"CUDA_MPS_LOG_DIRECTORY", dir + "/log"}};
  for (const char* sub : {"/pipe", "/log"}) ::mkdir((dir + sub).c_str(), 0700);
  undo.push_back([dir] {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  });
  if (!Capture({kMpsControl, "-d"}, env)) {
    return Unsupported(std::string("could not start the MPS control daemon (") + kMpsControl +
                       " -d failed); check that this user may use MPS on " +
                       env["CUDA_VISIBLE_DEVICES"]);
  }
  undo.push_back([env] {
    if (!Capture({kMpsControl}, env, "quit\n")) {
      std::cerr << "footprint: warning: could not stop the MPS control daemon; stop it with "
                   "CUDA_MPS_PIPE_DIRECTORY="
                << env.at("CUDA_MPS_PIPE_DIRECTORY") << " " << kMpsControl << " <<< quit\n";
    }
  });
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i]->collocation.mode != Collocation::Mode::kMps) continue;
    envs[i]["CUDA_MPS_PIPE_DIRECTORY"] = env["CUDA_MPS_PIPE_DIRECTORY"];
    envs[i]["CUDA_MPS_LOG_DIRECTORY"] = env["CUDA_MPS_LOG_DIRECTORY"];
    if (runs[i]->mps_thread_percentage) {
      envs[i]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] =
          std::to_string(*runs[i]->mps_thread_percentage);
    }
  }
  return Status::Ok();
}

// MIG: an instance of run `r`'s profile on `gpu`, destroyed by `undo`; returns its UUID.
Result<std::string> CreateMigInstance(const PlannedRun& r, const GpuEntity& gpu, UndoSteps& undo) {
  if (gpu.is_mig()) {
    return InvalidArgument("run " + r.key + " asks for a MIG instance on " + gpu.uuid +
                           ", which is itself a MIG device; name the whole GPU");
  }
  const std::string index = std::to_string(gpu.index);
  const std::string& profile = r.collocation.mig_profile;
  auto out = Capture({kNvidiaSmi, "mig", "-i", index, "-cgi", profile, "-C"});
  auto gi = out ? IdAfter(*out, "GPU instance ID") : std::nullopt;
  auto ci = out ? IdAfter(*out, "compute instance ID") : std::nullopt;
  if (!gi || !ci) {
    return Unsupported("could not create a MIG instance " + profile + " on GPU " + index +
                       " (nvidia-smi mig -i " + index + " -cgi " + profile +
                       " -C failed); is MIG mode enabled and is there room for it?");
  }
  const std::string g = std::to_string(*gi), c = std::to_string(*ci);
  undo.push_back([index, g, c] {
    bool ok = Capture({kNvidiaSmi, "mig", "-i", index, "-gi", g, "-ci", c, "-dci"}).has_value();
    ok = Capture({kNvidiaSmi, "mig", "-i", index, "-gi", g, "-dgi"}).has_value() && ok;
    if (!ok) {
      std::cerr << "footprint: warning: could not destroy MIG instance " << g << " on GPU " << index
                << "; run: nvidia-smi mig -i " << index << " -gi " << g
                << " -dci && nvidia-smi mig -i " << index << " -gi " << g << " -dgi\n";
    }
  });
  FP_ASSIGN_OR_RETURN(auto now, Inventory());
  std::string uuid;
  for (const GpuEntity& m : now) {
    if (m.is_mig() && m.index == gpu.index && m.gpu_instance_id == *gi &&
        m.compute_instance_id == *ci) {
      uuid = m.uuid;
    }
  }
  if (uuid.empty()) {
    return InternalError("created MIG instance " + g + " on GPU " + index +
                         " but NVML does not list it");
  }
  return uuid;
}

}  // namespace

Result<std::unique_ptr<DeviceSession>> DeviceSession::Start(
    const std::vector<const PlannedRun*>& runs) {
  std::unique_ptr<DeviceSession> s(new DeviceSession());
  s->env_.resize(runs.size());
  bool any = false;
  for (const PlannedRun* r : runs) any |= UsesGpu(*r);
  if (!any) return s;
  FP_ASSIGN_OR_RETURN(auto gpus, Inventory());
  // Every run's devices as UUIDs.
  std::vector<std::vector<const GpuEntity*>> devices(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    for (const auto& d : runs[i]->devices) {
      FP_ASSIGN_OR_RETURN(auto dev, FindDevice(gpus, d));
      devices[i].push_back(dev);
    }
    std::vector<std::string> uuids;
    for (const GpuEntity* g : devices[i]) uuids.push_back(g->uuid);
    if (!uuids.empty()) s->env_[i]["CUDA_VISIBLE_DEVICES"] = Joined(uuids, ",");
  }
  FP_RETURN_IF_ERROR(StartMps(runs, devices, s->env_, s->undo_));
  // MIG: an instance per run, on its first device.
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i]->collocation.mode != Collocation::Mode::kMig) continue;
    FP_ASSIGN_OR_RETURN(std::string uuid, CreateMigInstance(*runs[i], *devices[i][0], s->undo_));
    s->env_[i]["CUDA_VISIBLE_DEVICES"] = uuid;
  }
  return s;
}

DeviceSession::~DeviceSession() {
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) (*it)();
}

}  // namespace footprint::experiment
