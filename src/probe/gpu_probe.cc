#include "probe/gpu_probe.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "probe/gpu_energy.h"
#include "util/call_budget.h"
#include "util/clock.h"

namespace footprint {
namespace {

using json = nlohmann::json;
using nvml::Library;

// NVML keeps per-process samples only for processes with SM activity, a few per second: after
// a second without any, no process on the device used its SMs.
constexpr int64_t kProcessSamplesStaleNs = kNsPerSec;

// The order of a device's series, which reports keep: utilisation, then what the SMs and pipes
// really did (the activity metrics), then the rest.
constexpr auto kSeriesOrder = [] {
  std::array<size_t, kGpuMetrics.size()> order{};
  size_t n = 0;
  order[n++] = 0;  // gpu
  for (size_t k = kFirstGpuActivitySlot; k < kGpuMetrics.size(); ++k) order[n++] = k;
  for (size_t k = 1; k < kFirstGpuActivitySlot; ++k) order[n++] = k;
  return order;
}();
static_assert(kGpuMetrics[0] == MetricId::kGpu);

// Some NVML calls cost milliseconds of CPU: on an H100 with driver 580, 4 ms for the energy
// counter and 1.6 ms for per-process utilisation while processes use the GPU (most calls cost
// microseconds). Those are made no more often than keeps them under this share of the time.
constexpr double kCostlyCallShare = 0.01;

constexpr MetricId kTreeMetrics[] = {MetricId::kGpuTree, MetricId::kGpuMemoryTree,
                                     MetricId::kGpuEnergyTree};

size_t SlotOf(MetricId m) { return static_cast<size_t>(GpuMetricSlot(m)); }
bool Has(const MetricSet& set, MetricId m) { return set.test(static_cast<size_t>(m)); }

// Sorts by PID and merges duplicates (a process in both the compute and the graphics list,
// or in a GPU's list and its MIG device's): the largest figure NVML gave for it.
void MergeByPid(std::vector<nvml::ProcessMemory>& procs) {
  std::sort(procs.begin(), procs.end(), [](const auto& a, const auto& b) { return a.pid < b.pid; });
  size_t out = 0;
  for (size_t i = 0; i < procs.size(); ++i) {
    if (out > 0 && procs[out - 1].pid == procs[i].pid) {
      unsigned long long& kept = procs[out - 1].used_bytes;
      unsigned long long next = procs[i].used_bytes;
      if (kept == nvml::kValueNotAvailable || (next != nvml::kValueNotAvailable && next > kept)) {
        kept = next;
      }
      continue;
    }
    procs[out++] = procs[i];
  }
  procs.resize(out);
}

bool Listed(const std::vector<nvml::ProcessMemory>& sorted, pid_t pid) {
  auto it = std::lower_bound(
      sorted.begin(), sorted.end(), static_cast<unsigned int>(pid),
      [](const nvml::ProcessMemory& p, unsigned int value) { return p.pid < value; });
  return it != sorted.end() && it->pid == static_cast<unsigned int>(pid);
}

// " (1.234 s into the run)"
std::string IntoTheRun(int64_t now_ns, int64_t first_ns) {
  char buf[48];
  std::snprintf(buf, sizeof buf, " (%.3f s into the run)",
                static_cast<double>(now_ns - first_ns) / 1e9);
  return buf;
}

}  // namespace

struct GpuProbe::Unit {
  size_t position = 0;  // in the inventory
  GpuEntity info;
  GpuCapabilities caps;
  std::array<int, kGpuMetrics.size()> series;          // -1: not emitted
  std::vector<nvml::Device> migs;                      // every MIG device of a whole GPU
  const GpuEntity* whole = nullptr;                    // a MIG device's GPU (in inventory_)
  std::array<int, kGpuActivityCount> activity_source;  // index in options_.activity, or -1
  std::vector<int> activity_slot;                      // per source: its Watch slot, or -1
  bool lost = false;
  double lost_at_s = 0;
  std::string lost_reason;
  std::array<int64_t, kGpuMetrics.size()> errors{};
  std::array<std::string, kGpuMetrics.size()> last_error;
  std::array<std::string, kGpuMetrics.size()> stopped;  // supported at first, refused later

  // Running processes of this pass (GPU and its MIG devices), merged by PID.
  uint64_t procs_pass = 0;
  bool procs_ok = false;
  std::vector<nvml::ProcessMemory> procs, list;
  // Per-process SM utilisation: the newest samples' mean per PID, sorted by PID.
  uint64_t util_pass = 0;
  CallBudget util_budget{kCostlyCallShare};
  bool util_ok = false;
  std::vector<nvml::ProcessUtilizationSample> samples;
  unsigned long long last_seen_us = 0;
  std::vector<std::pair<pid_t, double>> latest_sm;
  int64_t latest_sm_ns = 0;
  // Power of this pass, for integration.
  uint64_t power_pass = 0;
  double power_w = 0;
  // Energy since the first reading, and the tree's attributed share of it.
  uint64_t energy_pass = 0;
  CallBudget energy_budget{kCostlyCallShare};
  bool energy_skipped = false;  // the last pass due to read the counter did not
  std::optional<double> last_share;
  DeviceEnergy energy{false};
  TreeEnergy tree_energy;
};

GpuProbe::~GpuProbe() = default;

std::unique_ptr<GpuProbe> GpuProbe::Open(Env& env, const MetricSet& wanted, ProcessMembers* tree,
                                         const std::optional<std::string>& gpus, json& meta,
                                         UnavailableMetrics* unavailable) {
  auto refuse = [&](const std::string& why) -> std::unique_ptr<GpuProbe> {
    meta["gpu"]["unavailable"] = why;
    for (MetricId m : kGpuMetrics) {
      if (unavailable && Has(wanted, m)) unavailable->Add(InfoOf(m).name, why);
    }
    return nullptr;
  };
  if (std::none_of(kGpuMetrics.begin(), kGpuMetrics.end(),
                   [&](MetricId m) { return Has(wanted, m); })) {
    return nullptr;
  }
  auto lib = nvml::Library::Open(env);
  if (!lib.ok()) return refuse(lib.status().message());
  Options o;
  o.nvml = std::move(lib).value();
  o.tree = tree;
  o.env = &env;
  if (gpus) {
    o.visible = gpus;
    o.visible_from = "--gpus";
  } else if (auto visible = env.Var("CUDA_VISIBLE_DEVICES")) {
    o.visible = *visible;
    o.visible_from = "CUDA_VISIBLE_DEVICES";
  }
  // The activity sources (GPM samples, a DCGM connection) only for a run that wants their metrics.
  if (std::any_of(kGpuMetrics.begin() + kFirstGpuActivitySlot, kGpuMetrics.end(),
                  [&](MetricId m) { return Has(wanted, m); })) {
    o.activity = OpenActivitySources(env, o.nvml);
  }
  auto probe = std::make_unique<GpuProbe>(std::move(o));
  meta["gpu"] = probe->Meta();
  if (!probe->problem().empty()) return refuse(probe->problem());
  return probe;
}

GpuProbe::GpuProbe(Options options) : options_(std::move(options)) {
  Library& lib = *options_.nvml;
  auto inventory = ListGpus(lib);
  if (!inventory.ok()) {
    problem_ = inventory.status().message();
    return;
  }
  inventory_ = std::move(inventory).value();
  GpuSelection sel = SelectGpus(inventory_, options_.visible);
  ignored_ = sel.ignored;
  if (sel.entities.empty()) {
    problem_ = options_.visible
                   ? "no GPU selected by " + options_.visible_from + "='" + *options_.visible + "'"
                   : "NVML reports no GPU";
    if (!ignored_.empty()) problem_ += " (" + ignored_ + ")";
    return;
  }
  for (size_t pos : sel.entities) {
    auto u = std::make_unique<Unit>();
    u->position = pos;
    u->info = inventory_[pos];
    u->caps = ProbeGpuCapabilities(lib, u->info, options_.tree != nullptr);
    if (u->info.is_mig()) u->whole = &inventory_[static_cast<size_t>(u->info.parent)];
    ChooseActivitySources(options_.activity, u->info, u->whole, u->caps, u->activity_source);
    u->activity_slot.assign(options_.activity.list.size(), -1);
    u->series.fill(-1);
    for (const GpuEntity& e : inventory_) {
      if (e.parent == static_cast<int>(pos)) u->migs.push_back(e.handle);
    }
    u->energy = DeviceEnergy(u->caps[SlotOf(MetricId::kGpuEnergy)].how == "counter");
    units_.push_back(std::move(u));
  }
  tree_pids_.reserve(256);
}

std::vector<SeriesSpec> GpuProbe::Series(const MetricSet& wanted) {
  wanted_ = wanted;
  series_declared_ = true;
  std::vector<SeriesSpec> specs;
  for (auto& u : units_) {
    WatchActivity(*u, wanted);
    for (size_t k : kSeriesOrder) {
      if (!Has(wanted, kGpuMetrics[k]) || !u->caps[k].ok) continue;
      u->series[k] = static_cast<int>(specs.size());
      specs.push_back({kGpuMetrics[k], u->info.entity});
    }
  }
  return specs;
}

bool GpuProbe::InTree(pid_t pid) const {
  return std::binary_search(tree_pids_.begin(), tree_pids_.end(), pid);
}

void GpuProbe::WatchActivity(Unit& u, const MetricSet& wanted) {
  // A source opened for a later device is none of this one's.
  u.activity_slot.resize(options_.activity.list.size(), -1);
  for (size_t s = 0; s < options_.activity.list.size(); ++s) {
    GpuActivitySet metrics;
    for (size_t i = 0; i < kGpuActivityCount; ++i) {
      metrics.set(i, u.activity_source[i] == static_cast<int>(s) &&
                         Has(wanted, kGpuMetrics[kFirstGpuActivitySlot + i]));
    }
    if (metrics.none()) continue;
    std::string why;
    u.activity_slot[s] = options_.activity.list[s]->Watch(u.info, u.whole, metrics, &why);
    if (u.activity_slot[s] >= 0) continue;
    for (size_t i = 0; i < kGpuActivityCount; ++i) {
      if (metrics.test(i)) u.caps[kFirstGpuActivitySlot + i] = {false, "", why};
    }
  }
}

void GpuProbe::ReadActivity(Unit& u, int64_t now_ns, const MetricSet& due, SampleOut& out) {
  for (size_t s = 0; s < u.activity_slot.size(); ++s) {
    if (u.activity_slot[s] < 0) continue;
    auto served = [&](size_t i) {
      const Slot k = kFirstGpuActivitySlot + i;
      return u.activity_source[i] == static_cast<int>(s) && u.series[k] >= 0 &&
             Has(due, kGpuMetrics[k]);
    };
    bool any = false;
    for (size_t i = 0; i < kGpuActivityCount; ++i) any = any || served(i);
    if (!any) continue;
    GpuActivity values;
    std::string why;
    const auto status = options_.activity.list[s]->Read(u.activity_slot[s], now_ns, values, &why);
    if (status == GpuActivitySource::ReadStatus::kTooSoon) continue;
    if (status == GpuActivitySource::ReadStatus::kLost) {
      MarkLost(u, why, now_ns);
      return;
    }
    for (size_t i = 0; i < kGpuActivityCount; ++i) {
      if (!served(i)) continue;
      const Slot k = kFirstGpuActivitySlot + i;
      if (status == GpuActivitySource::ReadStatus::kValues && !std::isnan(values[i])) {
        out.Add(u.series[k], values[i]);
        continue;
      }
      ++u.errors[k];
      if (status == GpuActivitySource::ReadStatus::kFailed) {
        u.last_error[k] = why;
      } else {
        u.last_error[k] = std::string(options_.activity.list[s]->name()) + " gave no value";
      }
    }
  }
}

void GpuProbe::MarkLost(Unit& u, const std::string& why, int64_t now_ns) {
  const double at_s = static_cast<double>(now_ns - first_ns_) / 1e9;
  for (auto& other : units_) {
    // A lost GPU takes its MIG devices with it.
    if (other.get() == &u ||
        (!u.info.is_mig() && other->info.parent == static_cast<int>(u.position))) {
      if (other->lost) continue;
      other->lost = true;
      other->lost_at_s = at_s;
      other->lost_reason = why;
    }
  }
}

bool GpuProbe::Check(Unit& u, Slot slot, int rc, Library::Fn fn, int64_t now_ns) {
  if (rc == nvml::kSuccess) return true;
  const std::string why =
      options_.nvml->Describe(rc, fn) + " from " + std::string(Library::NameOf(fn));
  if (nvml::IsDeviceLost(rc)) {
    MarkLost(u, why, now_ns);
    return false;
  }
  if (rc == nvml::kNotSupported || rc == nvml::kNoPermission || rc == nvml::kFunctionNotFound) {
    // Refused for good: never asked again.
    u.caps[slot].ok = false;
    if (u.stopped[slot].empty())
      u.stopped[slot] = why + ", refused" + IntoTheRun(now_ns, first_ns_);
    return false;
  }
  ++u.errors[slot];
  u.last_error[slot] = why;
  return false;
}

bool GpuProbe::ReadProcesses(Unit& u, int64_t now_ns) {
  if (u.procs_pass == pass_) return u.procs_ok;
  u.procs_pass = pass_;
  u.procs_ok = false;
  u.procs.clear();
  Library& lib = *options_.nvml;
  const Slot slot = SlotOf(MetricId::kGpuMemoryTree);
  if (!Check(u, slot, lib.ComputeProcesses(u.info.handle, u.list),
             Library::kDeviceGetComputeRunningProcesses, now_ns)) {
    return false;
  }
  u.procs.insert(u.procs.end(), u.list.begin(), u.list.end());
  // The graphics list is optional (compute-only boards refuse it); the MIG devices hold the
  // processes of a partitioned GPU.
  if (lib.GraphicsProcesses(u.info.handle, u.list) == nvml::kSuccess) {
    u.procs.insert(u.procs.end(), u.list.begin(), u.list.end());
  }
  for (nvml::Device mig : u.migs) {
    if (lib.ComputeProcesses(mig, u.list) == nvml::kSuccess) {
      u.procs.insert(u.procs.end(), u.list.begin(), u.list.end());
    }
  }
  MergeByPid(u.procs);
  u.procs_ok = true;
  return true;
}

bool GpuProbe::ReadProcessUtilization(Unit& u, int64_t now_ns) {
  if (u.util_pass == pass_) return u.util_ok;
  u.util_pass = pass_;
  // NVML keeps the samples: a later call gets those it skipped, and the newest still stand.
  if (!u.util_budget.Due(now_ns)) return u.util_ok;
  int rc = u.util_budget.Make(*options_.env, now_ns, [&] {
    return options_.nvml->ProcessUtilization(u.info.handle, u.last_seen_us, u.samples);
  });
  u.util_ok = rc == nvml::kNotFound || Check(u, SlotOf(MetricId::kGpuTree), rc,
                                             Library::kDeviceGetProcessUtilization, now_ns);
  if (!u.util_ok) return false;
  if (rc == nvml::kSuccess && !u.samples.empty()) {
    // One driver period's sample per active process, possibly several since the last pass:
    // the mean per process.
    std::sort(u.samples.begin(), u.samples.end(),
              [](const auto& a, const auto& b) { return a.pid < b.pid; });
    u.latest_sm.clear();
    for (size_t i = 0; i < u.samples.size();) {
      size_t j = i;
      double sum = 0;
      for (; j < u.samples.size() && u.samples[j].pid == u.samples[i].pid; ++j) {
        sum += u.samples[j].sm_util;
        u.last_seen_us = std::max(u.last_seen_us, u.samples[j].time_stamp);
      }
      u.latest_sm.emplace_back(static_cast<pid_t>(u.samples[i].pid),
                               sum / static_cast<double>(j - i));
      i = j;
    }
    u.latest_sm_ns = now_ns;
  } else if (u.latest_sm_ns == 0 || now_ns - u.latest_sm_ns > kProcessSamplesStaleNs) {
    u.latest_sm.clear();  // no process used the SMs lately
  }
  // Otherwise the newest samples still stand: each covers a driver period longer than a pass.
  return true;
}

std::optional<double> GpuProbe::TreeShare(Unit& u, int64_t now_ns, std::string* why,
                                          bool* transient) {
  const Slot list_slot = SlotOf(MetricId::kGpuMemoryTree);
  const Slot util_slot = SlotOf(MetricId::kGpuTree);
  const bool lists = u.caps[list_slot].ok;
  const bool per_process = u.caps[util_slot].ok;
  *transient = false;
  // A call that failed but was not refused for good (Check keeps its capability) is a passing
  // error: the caller attributes this interval's energy with the next share instead.
  if (lists && !ReadProcesses(u, now_ns)) {
    *why = "the running-process list failed (" + u.stopped[list_slot] + ")";
    *transient = u.caps[list_slot].ok;
    return std::nullopt;
  }
  if (per_process && !ReadProcessUtilization(u, now_ns)) {
    *why = "per-process utilisation failed (" + u.stopped[util_slot] + ")";
    *transient = u.caps[util_slot].ok;
    return std::nullopt;
  }
  // Who holds the device: the process lists, and whoever has utilisation samples.
  int tree = 0, foreign = 0;
  auto count = [&](pid_t pid) { InTree(pid) ? ++tree : ++foreign; };
  if (lists) {
    for (const auto& p : u.procs) count(static_cast<pid_t>(p.pid));
  }
  for (const auto& [pid, sm] : u.latest_sm) {
    if (!lists || !Listed(u.procs, pid)) count(pid);
  }
  if (tree == 0) return 0.0;
  if (foreign == 0) return 1.0;
  if (!per_process) {
    *why = "other processes share " + u.info.entity +
           " and NVML gives no per-process utilisation to split its energy (" +
           u.caps[SlotOf(MetricId::kGpuTree)].why + ")";
    return std::nullopt;
  }
  double tree_sm = 0, all_sm = 0;
  for (const auto& [pid, sm] : u.latest_sm) {
    all_sm += sm;
    if (InTree(pid)) tree_sm += sm;
  }
  if (all_sm > 0) return tree_sm / all_sm;
  // Nobody used the SMs: the idle device is shared by the processes that hold it.
  return static_cast<double>(tree) / static_cast<double>(tree + foreign);
}

void GpuProbe::UpdateEnergy(Unit& u, int64_t now_ns, const MetricSet& due, SampleOut& out) {
  if (u.energy_pass == pass_) return;
  u.energy_pass = pass_;
  Library& lib = *options_.nvml;
  const Slot ke = SlotOf(MetricId::kGpuEnergy);
  if (u.energy.from_counter()) {
    u.energy_skipped = !u.energy_budget.Due(now_ns);
    if (u.energy_skipped) return;
    unsigned long long mj = 0;
    const int rc = u.energy_budget.Make(*options_.env, now_ns,
                                        [&] { return lib.TotalEnergy(u.info.handle, &mj); });
    if (!Check(u, ke, rc, Library::kDeviceGetTotalEnergyConsumption, now_ns)) {
      return;
    }
    u.energy.AddCounter(now_ns, mj);
  } else {
    double watts = u.power_w;
    if (u.power_pass != pass_) {
      unsigned int mw = 0;
      if (!Check(u, ke, lib.PowerUsage(u.info.handle, &mw), Library::kDeviceGetPowerUsage,
                 now_ns)) {
        return;
      }
      watts = mw / 1e3;
    }
    u.energy.AddPower(now_ns, watts);
  }
  if (Has(due, MetricId::kGpuEnergy) && u.series[ke] >= 0) out.Add(u.series[ke], u.energy.joules());

  const Slot kt = SlotOf(MetricId::kGpuEnergyTree);
  if (u.series[kt] < 0 || !u.caps[kt].ok || !u.tree_energy.unknown().empty()) return;
  std::string why;
  bool transient = false;
  std::optional<double> share;
  if (u.tree_energy.started()) {
    share = TreeShare(u, now_ns, &why, &transient);
    if (u.lost) return;
    if (share) u.last_share = share;
  }
  if (!u.tree_energy.Attribute(u.energy.joules(), share, transient,
                               why + IntoTheRun(now_ns, first_ns_))) {
    return;
  }
  if (Has(due, MetricId::kGpuEnergyTree)) out.Add(u.series[kt], u.tree_energy.joules());
}

void GpuProbe::EmitTreeMemory(Unit& u, SampleOut& out) {
  double bytes = 0;
  bool known = true;
  for (const auto& p : u.procs) {
    if (!InTree(static_cast<pid_t>(p.pid))) continue;
    if (p.used_bytes == nvml::kValueNotAvailable) known = false;
    bytes += static_cast<double>(p.used_bytes);
  }
  const Slot k = SlotOf(MetricId::kGpuMemoryTree);
  if (known) {
    out.Add(u.series[k], bytes);
  } else {
    ++u.errors[k];
    u.last_error[k] = "NVML gives no memory figure for a process of the tree";
  }
}

double GpuProbe::TreeSm(const Unit& u) const {
  double sm = 0;
  for (const auto& [pid, util] : u.latest_sm) {
    if (InTree(pid)) sm += util;
  }
  return sm;
}

void GpuProbe::SampleUnit(Unit& u, int64_t now_ns, const MetricSet& due, SampleOut& out) {
  Library& lib = *options_.nvml;
  const nvml::Device h = u.info.handle;
  auto wanted = [&](MetricId m) {
    const Slot k = SlotOf(m);
    return !u.lost && Has(due, m) && u.series[k] >= 0 && u.caps[k].ok;
  };
  auto emit = [&](MetricId m, double v) { out.Add(u.series[SlotOf(m)], v); };
  auto read_uint = [&](MetricId m, int (Library::*get)(nvml::Device, unsigned int*) const,
                       Library::Fn fn, double scale) -> std::optional<double> {
    unsigned int v = 0;
    if (!wanted(m) || !Check(u, SlotOf(m), (lib.*get)(h, &v), fn, now_ns)) return std::nullopt;
    emit(m, v * scale);
    return v * scale;
  };
  if (wanted(MetricId::kGpu)) {
    nvml::Utilization util;
    if (Check(u, SlotOf(MetricId::kGpu), lib.UtilizationRates(h, &util),
              Library::kDeviceGetUtilizationRates, now_ns)) {
      emit(MetricId::kGpu, util.gpu);
    }
  }
  if (wanted(MetricId::kGpuMemory)) {
    nvml::Memory mem;
    if (Check(u, SlotOf(MetricId::kGpuMemory), lib.MemoryInfo(h, &mem),
              Library::kDeviceGetMemoryInfo, now_ns)) {
      emit(MetricId::kGpuMemory, static_cast<double>(mem.used));
    }
  }
  if (auto watts = read_uint(MetricId::kGpuPower, &Library::PowerUsage,
                             Library::kDeviceGetPowerUsage, 1e-3)) {
    u.power_w = *watts;  // reused by power integration in this pass
    u.power_pass = pass_;
  }
  read_uint(MetricId::kGpuSmClock, &Library::SmClock, Library::kDeviceGetClockInfo, 1);
  read_uint(MetricId::kGpuTemperature, &Library::Temperature, Library::kDeviceGetTemperature, 1);
  if (wanted(MetricId::kGpuMemoryTree) && ReadProcesses(u, now_ns)) EmitTreeMemory(u, out);
  if (wanted(MetricId::kGpuTree) && ReadProcessUtilization(u, now_ns)) {
    emit(MetricId::kGpuTree, TreeSm(u));
  }
  if (!u.lost) ReadActivity(u, now_ns, due, out);
  // Both energies rest on the device's energy reading: none once it was refused for good.
  if ((wanted(MetricId::kGpuEnergy) || wanted(MetricId::kGpuEnergyTree)) &&
      u.caps[SlotOf(MetricId::kGpuEnergy)].ok) {
    UpdateEnergy(u, now_ns, due, out);
  }
}

void GpuProbe::Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) {
  ++pass_;
  if (first_ns_ == 0) first_ns_ = now_ns;
  last_pass_ns_ = now_ns;
  if (options_.tree != nullptr && std::any_of(std::begin(kTreeMetrics), std::end(kTreeMetrics),
                                              [&](MetricId m) { return Has(due, m); })) {
    const std::vector<pid_t>& members = options_.tree->MembersAt(now_ns);
    tree_pids_.assign(members.begin(), members.end());
    std::sort(tree_pids_.begin(), tree_pids_.end());
  }
  for (auto& u : units_) {
    if (!u->lost) SampleUnit(*u, now_ns, due, out);
  }
}

json GpuProbe::Meta() const {
  const Library& lib = *options_.nvml;
  json g = json::object();
  g["library"] = lib.path();
  g["driver_version"] = lib.DriverVersion();
  g["nvml_version"] = lib.NvmlVersion();
  if (auto missing = lib.MissingOptional(); !missing.empty()) g["missing_functions"] = missing;
  json selection = {{"from", options_.visible ? options_.visible_from : "all GPUs"}};
  if (options_.visible) selection["list"] = *options_.visible;
  if (!ignored_.empty()) selection["ignored"] = ignored_;
  g["selection"] = selection;
  json devices = json::object();
  json unsupported = json::object();
  for (const auto& u : units_) {
    json d = {{"name", u->info.name}, {"uuid", u->info.uuid}};
    if (u->info.memory_total_bytes) d["memory_total_bytes"] = *u->info.memory_total_bytes;
    if (u->info.is_mig()) {
      if (u->info.gpu_instance_id) d["gpu_instance_id"] = *u->info.gpu_instance_id;
      if (u->info.compute_instance_id) d["compute_instance_id"] = *u->info.compute_instance_id;
    } else {
      d["mig_mode"] = u->info.mig_mode;
    }
    u->energy.Describe(u->caps[SlotOf(MetricId::kGpuEnergy)].ok, d);
    // How far the costly calls were put off (kCostlyCallShare), where it was more than 1 ms.
    if (u->energy_budget.longest_gap_ms() > 1) {
      d["energy_read_gap_ms"] = u->energy_budget.longest_gap_ms();
    }
    if (u->util_budget.longest_gap_ms() > 1) {
      d["process_utilization_read_gap_ms"] = u->util_budget.longest_gap_ms();
    }
    json activity = json::object();
    for (size_t k = kFirstGpuActivitySlot; k < kGpuMetrics.size(); ++k) {
      if (u->series[k] >= 0) activity[std::string(InfoOf(kGpuMetrics[k]).name)] = u->caps[k].how;
    }
    if (!activity.empty()) d["activity"] = activity;
    if (u->tree_energy.started()) d["energy_tree_j"] = u->tree_energy.joules();
    if (!u->tree_energy.unknown().empty()) d["energy_tree_unknown"] = u->tree_energy.unknown();
    if (u->lost) {
      d["lost_at_s"] = u->lost_at_s;
      d["lost_reason"] = u->lost_reason;
    }
    json errors = json::object();
    for (size_t k = 0; k < kGpuMetrics.size(); ++k) {
      const std::string key = std::string(InfoOf(kGpuMetrics[k]).name) + "@" + u->info.entity;
      if (Has(wanted_, kGpuMetrics[k]) && u->series[k] < 0) unsupported[key] = u->caps[k].why;
      if (!u->stopped[k].empty()) unsupported[key] = u->stopped[k];
      if (u->errors[k] > 0) {
        errors[std::string(InfoOf(kGpuMetrics[k]).name)] = {{"count", u->errors[k]},
                                                            {"last", u->last_error[k]}};
      }
    }
    if (!errors.empty()) d["errors"] = errors;
    devices[u->info.entity] = d;
  }
  g["devices"] = devices;
  if (series_declared_) g["unsupported"] = unsupported;  // known once Series() was asked
  return g;
}

void GpuProbe::ReadEnergyOnceMore(Unit& u) {
  const Slot ke = SlotOf(MetricId::kGpuEnergy);
  unsigned long long mj = 0;
  if (u.lost || !u.energy.from_counter() || !u.energy.started() || !u.caps[ke].ok ||
      u.series[ke] < 0 || options_.nvml->TotalEnergy(u.info.handle, &mj) != nvml::kSuccess) {
    return;
  }
  u.energy.AddCounter(std::max(options_.env->MonotonicNs(), last_pass_ns_), mj);
  // The tree's processes are gone by now: the last stretch goes by the last share known.
  if (u.tree_energy.started() && u.last_share) {
    u.tree_energy.Attribute(u.energy.joules(), u.last_share, true, "");
  }
}

void GpuProbe::Finish(ProbeFindings& findings) {
  // Counter readings skipped for their cost (kCostlyCallShare) leave the end of the run out.
  for (auto& u : units_) {
    if (u->energy_skipped) ReadEnergyOnceMore(*u);
  }
  findings.meta["gpu"] = Meta();
  double energy = 0, tree_energy = 0;
  bool any_energy = false, any_tree = false, tree_known = true, energy_known = true;
  const Slot ke = SlotOf(MetricId::kGpuEnergy);
  for (const auto& u : units_) {
    if (u->info.is_mig()) continue;  // the GPU's energy already holds its MIG devices'
    if (u->energy.started() && u->series[ke] >= 0) {
      energy += u->energy.joules();
      any_energy = true;
      if (!u->caps[ke].ok) {  // refused mid-run: the sum would pass for the whole run's
        energy_known = false;
        findings.warnings.push_back("the GPU energy of the run is unknown: " + u->info.entity +
                                    " stopped giving it (" + u->stopped[ke] + ")");
      }
    }
    if (u->series[SlotOf(MetricId::kGpuEnergyTree)] >= 0) {
      any_tree = true;
      if (!u->tree_energy.unknown().empty()) {
        tree_known = false;
        findings.warnings.push_back("the GPU energy of the process tree is unknown: " +
                                    u->tree_energy.unknown());
      }
      tree_energy += u->tree_energy.joules();
    }
  }
  if (any_energy && energy_known) findings.totals["gpu_energy_j"] = energy;
  if (any_tree && tree_known && energy_known) findings.totals["gpu_energy_tree_j"] = tree_energy;
  for (const auto& u : units_) {
    if (!u->lost) continue;
    char at[32];
    std::snprintf(at, sizeof at, "%.3f", u->lost_at_s);
    findings.warnings.push_back("GPU " + u->info.entity + " (" + u->info.name + ") was lost " + at +
                                " s into the run (" + u->lost_reason +
                                "); it was not sampled after that");
  }
}

}  // namespace footprint
