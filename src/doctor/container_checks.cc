#include "doctor/container_checks.h"

#include <unistd.h>

#include <optional>
#include <string>

#include "footprint/profiler.h"
#include "probe/cgroup.h"
#include "run/container.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace footprint {
namespace {

constexpr const char* kEngines[] = {"podman", "docker", "nerdctl"};
constexpr int kCapSysResource = 24;
constexpr const char* kEnables =
    "container_* totals of footprint run -- ENGINE run and --container";

bool HasCapability(int cap) {
  auto status = ReadWholeFile("/proc/self/status");
  if (!status.ok()) return false;
  for (std::string_view line : Split(*status, '\n')) {
    if (!line.starts_with("CapEff:")) continue;
    const uint64_t mask = std::strtoull(std::string(Trim(line.substr(7))).c_str(), nullptr, 16);
    return (mask >> cap) & 1U;
  }
  return false;
}

// Whether footprint can give a container a parent cgroup at the hierarchies' roots: tried.
DoctorCheck ParentCgroupCheck(const CgroupSupport& own) {
  DoctorCheck c{"container cgroups", false, "", kEnables};
  const CgroupSupport roots = AtHierarchyRoots(own);
  if (!roots.why_no_cpu.empty()) {
    c.detail = roots.why_no_cpu;
    return c;
  }
  auto made = RunCgroup::Create(roots, "footprint-doctor-container-" + std::to_string(getpid()));
  c.ok = made.ok();
  c.detail = c.ok ? "a parent cgroup at the hierarchies' roots: " + (*made)->cpu_source() +
                        ((*made)->has_memory() ? ", " + (*made)->memory_source() : "")
                  : made.status().message();
  return c;
}

// What keeps podman's (or nerdctl's) containers from running or being measured here.
std::vector<std::string> PodmanProblems(const std::string& engine, const CgroupSupport& own) {
  std::vector<std::string> problems;
  const std::string runtime =
      CaptureFirstLine({engine, "info", "--format", "{{.Host.OCIRuntime.Name}}"});
  const bool hybrid_or_v1 = !own.v1_cpuacct_root.empty();
  if (runtime == "crun" && hybrid_or_v1) {
    problems.push_back(
        "its runtime crun refuses containers on cgroup v1/hybrid machines (\"cgroups in hybrid "
        "mode not supported\"): use runc (" +
        engine + " --runtime runc, or scripts/runc-no-rlimits)");
  }
  if (::geteuid() != 0 && own.v2_dir.empty()) {
    problems.push_back(
        "rootless without a delegated cgroup v2 subtree: run footprint as root, or in "
        "systemd-run --user --scope -p Delegate=yes");
  }
  return problems;
}

DoctorCheck EngineCheck(const std::string& engine, const CgroupSupport& own) {
  DoctorCheck c{"container " + engine, false, CaptureFirstLine({engine, "--version"}), kEnables};
  std::vector<std::string> problems;
  if (engine == "docker") {
    if (std::string problem = DockerDaemonProblem(); !problem.empty()) {
      problems.push_back(problem);
    }
  } else {
    problems = PodmanProblems(engine, own);
  }
  if (!HasCapability(kCapSysResource)) {
    problems.push_back(
        "no CAP_SYS_RESOURCE here: runc fails on the OCI spec's rlimits (\"setrlimit "
        "RLIMIT_NPROC: Operation not permitted\"); run with --runtime scripts/runc-no-rlimits");
  }
  c.ok = problems.empty();
  for (const std::string& p : problems) c.detail += "; " + p;
  if (c.ok) c.detail += "; its containers can be measured";
  return c;
}

}  // namespace

void AddContainerChecks(std::vector<DoctorCheck>& checks) {
  const CgroupSupport own = DetectCgroups();
  bool any = false;
  for (const char* engine : kEngines) {
    if (!FindOnPath(Env::Default(), engine)) continue;
    if (!any) checks.push_back(ParentCgroupCheck(own));
    any = true;
    checks.push_back(EngineCheck(engine, own));
  }
  if (!any) {
    checks.push_back({"containers", false,
                      "no container engine: none of podman, docker, nerdctl is on PATH", kEnables});
  }
}

}  // namespace footprint
