#include "probe/rapl_probe.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;

constexpr std::string_view kMsrPrefix = "intel-rapl:";
constexpr std::string_view kMmioPrefix = "intel-rapl-mmio:";

std::optional<uint64_t> ReadCounter(const KernelFile& file) {
  char buf[32];
  std::optional<int64_t> v = ParseInt(file.Read(buf, sizeof buf));
  if (!v || *v < 0) return std::nullopt;
  return static_cast<uint64_t>(*v);
}

std::string Slurp(const std::string& path) {
  auto text = ReadWholeFile(path);
  return text.ok() ? std::string(Trim(*text)) : std::string();
}

RaplDomain::Kind KindOf(std::string_view name) {
  if (name.starts_with("package")) return RaplDomain::Kind::kPackage;
  if (name == "dram") return RaplDomain::Kind::kDram;
  return RaplDomain::Kind::kOther;
}

const char* MetricOf(RaplDomain::Kind kind) {
  switch (kind) {
    case RaplDomain::Kind::kPackage:
      return "energy.cpu";
    case RaplDomain::Kind::kDram:
      return "energy.dram";
    case RaplDomain::Kind::kOther:
      break;
  }
  return nullptr;
}

std::string WhyUnreadable(int error, const std::string& dir) {
  if (error == EACCES || error == EPERM) {
    return "energy_uj is readable by root only (Linux 5.10 and later, CVE-2020-8694): run "
           "footprint as root, or allow it until the next boot with: sudo chmod a+r " +
           dir + "/intel-rapl:*/energy_uj";
  }
  return std::string("energy_uj cannot be read: ") + std::strerror(error);
}

// Why there is no readable domain of `kind` (empty when there is one).
std::string WhyNoDomain(const RaplDiscovery& d, RaplDomain::Kind kind) {
  if (!d.why_unavailable.empty()) return d.why_unavailable;
  std::string unreadable;
  for (const RaplDomain& dom : d.domains) {
    if (dom.kind != kind || !dom.counted) continue;
    if (dom.unreadable.empty()) return "";
    unreadable = dom.unreadable;
  }
  if (!unreadable.empty()) return unreadable;
  return kind == RaplDomain::Kind::kDram
             ? "no RAPL DRAM domain under " + d.powercap_dir +
                   " (this CPU's RAPL does not report DRAM energy; servers usually do)"
             : "no RAPL package domain under " + d.powercap_dir;
}

// Why the energy counter of `dom` (in zone directory `dir`) cannot be used; "" when it can.
std::string WhyRaplCounterUnreadable(const std::string& dir, const RaplDomain& dom,
                                     const std::string& powercap_dir) {
  errno = 0;
  KernelFile energy(dir + "/energy_uj");
  const int open_error = errno;
  if (!energy.is_open()) return WhyUnreadable(open_error, powercap_dir);
  if (errno = 0; !ReadCounter(energy)) {
    return WhyUnreadable(errno != 0 ? errno : EIO, powercap_dir);
  }
  if (!dom.max_range_uj) {
    return "max_energy_range_uj is missing, so wrap-arounds cannot be corrected";
  }
  return "";
}

}  // namespace

uint64_t WrappedDelta(uint64_t last, uint64_t cur, uint64_t max_range) {
  if (cur >= last) return cur - last;
  return max_range - last + cur;  // the counter went past max_range and restarted at 0
}

RaplDiscovery DiscoverRapl(const std::string& sysfs_root) {
  namespace fs = std::filesystem;
  RaplDiscovery d;
  d.powercap_dir = sysfs_root + "/class/powercap";
  const std::string not_exposed =
      " (not exposed by this virtual machine / CPU, or the RAPL driver is not loaded: sudo "
      "modprobe intel_rapl_msr)";
  std::error_code ec;
  std::vector<std::string> zones;
  for (const fs::directory_entry& e : fs::directory_iterator(d.powercap_dir, ec)) {
    std::string zone = e.path().filename().string();
    if (zone.starts_with(kMsrPrefix) || zone.starts_with(kMmioPrefix)) zones.push_back(zone);
  }
  if (ec) {
    d.why_unavailable = "no RAPL domains: " + d.powercap_dir + " does not exist" + not_exposed;
    return d;
  }
  if (zones.empty()) {
    d.why_unavailable = "no RAPL domains under " + d.powercap_dir + not_exposed;
    return d;
  }
  // The MSR zones first, so that the MMIO interface's copies of them are the ones skipped;
  // parents before their subzones.
  std::sort(zones.begin(), zones.end(), [](const std::string& a, const std::string& b) {
    bool ma = a.starts_with(kMmioPrefix), mb = b.starts_with(kMmioPrefix);
    return ma != mb ? mb : a < b;
  });
  std::map<std::string, std::string> zone_names;  // zone -> its name
  std::map<std::string, std::string> seen;        // "parent name/name" -> first zone
  for (const std::string& zone : zones) {
    const std::string dir = d.powercap_dir + "/" + zone;
    RaplDomain dom;
    dom.zone = zone;
    dom.name = Slurp(dir + "/name");
    zone_names[zone] = dom.name;
    dom.kind = KindOf(dom.name);
    // "intel-rapl:0:2" is a subzone of "intel-rapl:0".
    std::string parent_name;
    if (size_t colon = zone.rfind(':'); colon != zone.find(':')) {
      parent_name = zone_names[zone.substr(0, colon)];
    }
    auto [it, fresh] = seen.emplace(parent_name + "/" + dom.name, zone);
    dom.counted = fresh && dom.kind != RaplDomain::Kind::kOther;
    if (auto range = ParseInt(Slurp(dir + "/max_energy_range_uj")); range && *range > 0) {
      dom.max_range_uj = static_cast<uint64_t>(*range);
    }
    if (dom.counted) dom.unreadable = WhyRaplCounterUnreadable(dir, dom, d.powercap_dir);
    d.domains.push_back(std::move(dom));
  }
  return d;
}

RaplProbe::RaplProbe(std::string sysfs_root) : sysfs_root_(std::move(sysfs_root)) {}

std::vector<SeriesSpec> RaplProbe::Series(const MetricSet& wanted) {
  std::vector<SeriesSpec> specs;
  wanted_.set(static_cast<size_t>(MetricId::kEnergyCpu),
              wanted.test(static_cast<size_t>(MetricId::kEnergyCpu)));
  wanted_.set(static_cast<size_t>(MetricId::kEnergyDram),
              wanted.test(static_cast<size_t>(MetricId::kEnergyDram)));
  if (wanted_.none()) return specs;
  discovery_ = DiscoverRapl(sysfs_root_);
  for (size_t i = 0; i < discovery_.domains.size(); ++i) {
    const RaplDomain& dom = discovery_.domains[i];
    if (!dom.counted || !dom.unreadable.empty()) continue;
    Counter c{i, KernelFile(discovery_.powercap_dir + "/" + dom.zone + "/energy_uj")};
    (dom.kind == RaplDomain::Kind::kPackage ? cpu_ : dram_).push_back(std::move(c));
  }
  if (wanted_.test(static_cast<size_t>(MetricId::kEnergyCpu)) && !cpu_.empty()) {
    cpu_series_ = static_cast<int>(specs.size());
    specs.push_back({MetricId::kEnergyCpu, "system"});
  }
  if (wanted_.test(static_cast<size_t>(MetricId::kEnergyDram)) && !dram_.empty()) {
    dram_series_ = static_cast<int>(specs.size());
    specs.push_back({MetricId::kEnergyDram, "system"});
  }
  return specs;
}

void RaplProbe::ReadAll() {
  for (std::vector<Counter>* counters : {&cpu_, &dram_}) {
    for (Counter& c : *counters) {
      std::optional<uint64_t> now = ReadCounter(c.file);
      if (!now) {
        ++c.failed_reads;
        continue;
      }
      if (c.started) {
        if (*now < c.last_uj) ++c.wraps;
        c.total_uj += WrappedDelta(c.last_uj, *now, *discovery_.domains[c.domain].max_range_uj);
      }
      c.last_uj = *now;
      c.started = true;
    }
  }
}

void RaplProbe::Sample(int64_t /*now_ns*/, const MetricSet& due, SampleOut& out) {
  const bool cpu_due = cpu_series_ >= 0 && due.test(static_cast<size_t>(MetricId::kEnergyCpu));
  const bool dram_due = dram_series_ >= 0 && due.test(static_cast<size_t>(MetricId::kEnergyDram));
  if (!cpu_due && !dram_due) return;
  ReadAll();
  auto joules = [](const std::vector<Counter>& counters) {
    uint64_t uj = 0;
    for (const Counter& c : counters) uj += c.total_uj;
    return static_cast<double>(uj) / 1e6;
  };
  if (cpu_due) out.Add(cpu_series_, joules(cpu_));
  if (dram_due) out.Add(dram_series_, joules(dram_));
}

void RaplProbe::Finish(ProbeFindings& findings) {
  if (wanted_.none()) return;
  ReadAll();  // the energy up to the end of the run
  json domains = json::array();
  for (const RaplDomain& dom : discovery_.domains) {
    json d = {{"zone", dom.zone}, {"name", dom.name}};
    const char* metric = MetricOf(dom.kind);
    d["counted_in"] = dom.counted ? json(metric) : json(nullptr);
    if (!dom.counted) {
      d["why_not_counted"] = dom.kind == RaplDomain::Kind::kOther
                                 ? (dom.name == "psys" ? "the platform domain contains the packages"
                                                       : "a part of its package")
                                 : "a duplicate of an intel-rapl zone of the same name";
    }
    if (!dom.unreadable.empty()) d["unreadable"] = dom.unreadable;
    domains.push_back(std::move(d));
  }
  for (const std::vector<Counter>* counters : {&cpu_, &dram_}) {
    for (const Counter& c : *counters) {
      json& d = domains[c.domain];
      d["energy_j"] = static_cast<double>(c.total_uj) / 1e6;
      d["wraps"] = c.wraps;
      if (c.failed_reads > 0) d["failed_reads"] = c.failed_reads;
    }
  }
  json meta = {{"powercap", discovery_.powercap_dir}, {"domains", domains}};

  // Totals for what was measured; one warning for what was asked for and cannot be.
  UnavailableMetrics missing;
  auto settle = [&](MetricId metric, const std::vector<Counter>& counters, RaplDomain::Kind kind,
                    const char* total) {
    if (!wanted_.test(static_cast<size_t>(metric))) return;
    if (!counters.empty()) {
      uint64_t uj = 0;
      for (const Counter& c : counters) uj += c.total_uj;
      findings.totals[total] = static_cast<double>(uj) / 1e6;
      return;
    }
    std::string why = WhyNoDomain(discovery_, kind);
    meta["unavailable"][std::string(InfoOf(metric).name)] = why;
    missing.Add(InfoOf(metric).name, why);
  };
  settle(MetricId::kEnergyCpu, cpu_, RaplDomain::Kind::kPackage, "cpu_energy_j");
  settle(MetricId::kEnergyDram, dram_, RaplDomain::Kind::kDram, "dram_energy_j");
  missing.Warn(findings.warnings);
  findings.meta["rapl"] = std::move(meta);
}

}  // namespace footprint
