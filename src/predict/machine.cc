#include "predict/machine.h"

#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "predict/json_members.h"
#include "util/file.h"
#include "util/strings.h"

namespace footprint::predict {
namespace {

using json = nlohmann::json;

// The value of the first "key : value" line of /proc/cpuinfo whose key is `key`.
std::string CpuinfoField(const std::string& cpuinfo, std::string_view key) {
  for (std::string_view line : Split(cpuinfo, '\n')) {
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos && Trim(line.substr(0, colon)) == key) {
      return std::string(Trim(line.substr(colon + 1)));
    }
  }
  return "";
}

// OpenBLAS's kernel and threads, asked of the library (the first that `env` loads of `library`
// and libopenblas.so.0); null when none loads or it is not OpenBLAS. The library stays loaded:
// it starts its threads when loaded, and this process ends soon after.
json AskOpenBlas(Env& env, const std::string& library) {
  for (const std::string& name : {library, std::string("libopenblas.so.0")}) {
    if (name.empty() || (name.find('/') != std::string::npos && !std::filesystem::exists(name))) {
      continue;
    }
    void* handle = env.OpenLibrary(name, /*error=*/nullptr, /*path_used=*/nullptr);
    if (handle == nullptr) continue;
    auto corename = reinterpret_cast<char* (*)()>(::dlsym(handle, "openblas_get_corename"));
    auto threads = reinterpret_cast<int (*)()>(::dlsym(handle, "openblas_get_num_threads"));
    if (corename == nullptr || threads == nullptr) continue;
    Dl_info info{};
    const bool named = ::dladdr(reinterpret_cast<void*>(corename), &info) != 0 && info.dli_fname;
    return {{"library", named ? std::filesystem::weakly_canonical(info.dli_fname).string() : name},
            {"kernel", std::string(Trim(corename()))},
            {"threads", threads()}};
  }
  return nullptr;
}

// `record`'s ISA flags as a set.
std::set<std::string> IsaOf(const json& record) {
  std::set<std::string> flags;
  for (const json& f : Member(record, "isa")) {
    if (f.is_string()) flags.insert(f.get<std::string>());
  }
  return flags;
}

std::string Joined(const std::set<std::string>& words) {
  std::string all;
  for (const std::string& w : words) all += (all.empty() ? "" : " ") + w;
  return all;
}

// "avx512f here only", "avx2 there only": the ISA flags one side has.
void CompareIsa(const json& recorded, const json& here, std::vector<std::string>& out) {
  if (!Member(recorded, "isa").is_array()) return;
  const std::set<std::string> there = IsaOf(recorded), ours = IsaOf(here);
  std::set<std::string> only_here, only_there;
  std::set_difference(ours.begin(), ours.end(), there.begin(), there.end(),
                      std::inserter(only_here, only_here.end()));
  std::set_difference(there.begin(), there.end(), ours.begin(), ours.end(),
                      std::inserter(only_there, only_there.end()));
  if (!only_here.empty()) out.push_back("ISA " + Joined(only_here) + " here only");
  if (!only_there.empty()) out.push_back("ISA " + Joined(only_there) + " there only");
}

}  // namespace

json MachineOfRows(const std::vector<Row>& rows) {
  json m = json::object();
  if (rows.empty()) return m;
  // Member `key` from `field` of every row, where they all hold the same non-empty value.
  auto shared = [&](json& into, const char* key, auto field) {
    const auto first = field(rows[0]);
    if (first == decltype(first){}) return;
    for (const Row& r : rows) {
      if (field(r) != first) return;
    }
    into[key] = first;
  };
  shared(m, "cpu_model", [](const Row& r) { return r.machine.cpu_model; });
  shared(m, "cores", [](const Row& r) { return r.machine.cores; });
  shared(m, "threads", [](const Row& r) { return r.threads; });
  shared(m, "isa", [](const Row& r) { return r.machine.isa; });
  if (m.contains("isa")) {
    const std::string isa = m["isa"].get<std::string>();
    std::set<std::string> flags;
    for (std::string_view f : Split(isa, ' ')) {
      if (!f.empty()) flags.emplace(f);
    }
    m["isa"] = flags;
  }
  json blas = json::object();
  shared(blas, "library", [](const Row& r) { return r.machine.blas_library; });
  shared(blas, "kernel", [](const Row& r) { return r.machine.blas_kernel; });
  shared(blas, "threads", [](const Row& r) { return r.machine.blas_threads; });
  if (!blas.empty()) m["blas"] = blas;
  return m;
}

json ThisMachine(const std::string& blas_library, Env& env) {
  json m = json::object();
  const Result<std::string> cpuinfo = ReadWholeFile(env.ProcRoot() + "/cpuinfo");
  if (cpuinfo.ok()) {
    m["cpu_model"] = CpuinfoField(*cpuinfo, "model name");
    // x86 names them "flags", ARM "Features".
    const std::string flags =
        CpuinfoField(*cpuinfo, "flags") + " " + CpuinfoField(*cpuinfo, "Features");
    std::set<std::string> present;
    for (std::string_view flag : Split(flags, ' ')) present.emplace(flag);
    std::set<std::string> isa;
    for (const char* flag : kIsaFlags) {
      if (present.count(flag)) isa.insert(flag);
    }
    m["isa"] = isa;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) m["cores"] = CPU_COUNT(&set);
  m["blas"] = AskOpenBlas(env, blas_library);
  return m;
}

MachineVerdict CompareMachines(const json& recorded, const json& here) {
  MachineVerdict v;
  const std::string model = Text(recorded, "cpu_model", "");
  v.recorded = !model.empty();
  if (!v.recorded) return v;
  if (const std::string ours = Text(here, "cpu_model", ""); ours != model) {
    v.differences.push_back("CPU '" + model + "' there, '" + ours + "' here");
  }
  CompareIsa(recorded, here, v.differences);
  const std::string kernel = Text(Object(recorded, "blas"), "kernel", "");
  const std::string ours = Text(Object(here, "blas"), "kernel", "");
  if (!kernel.empty() && kernel != ours) {
    v.differences.push_back("BLAS kernel " + kernel + " there, " +
                            (ours.empty() ? "no OpenBLAS" : ours) + " here");
  }
  const double threads = Number(recorded, "threads", 0), cores = Number(here, "cores", 0);
  if (threads > 0 && cores > 0 && threads > cores) {
    v.differences.push_back(std::to_string(static_cast<int>(threads)) + " threads there, " +
                            std::to_string(static_cast<int>(cores)) + " cores here");
  }
  return v;
}

}  // namespace footprint::predict
