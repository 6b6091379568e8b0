// The reproducibility record of an experiment's runs, and the differences between two.
#include "experiment/repro.h"

#include <cctype>

#include "footprint/env.h"
#include "footprint/store.h"
#include "probe/nvml.h"
#include "run/run_metadata.h"
#include "util/json_text.h"
#include "util/sha256.h"
#include "util/strings.h"
#include "util/subprocess.h"

extern char** environ;

namespace footprint::experiment {
namespace {

using json = nlohmann::json;

// Lists the installed distributions of the Python that runs it, as {name: version}.
constexpr const char* kPythonPackages =
    "import importlib.metadata as m, json, sys\n"
    "d = {}\n"
    "for x in m.distributions():\n"
    "    n = x.metadata['Name']\n"
    "    if n: d[n] = x.version\n"
    "print(json.dumps({'version': sys.version.split()[0], 'executable': sys.executable, "
    "'packages': d}))\n";

}  // namespace

bool IsSecretName(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* word : {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL", "AUTH",
                           "COOKIE", "SESSION"}) {
    if (upper.find(word) != std::string::npos) return true;
  }
  return false;
}

json FilteredEnvironment(const std::map<std::string, std::string>& overrides) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  for (const auto& [k, v] : overrides) env[k] = v;
  json out = json::object();
  // A database URI (FOOTPRINT_DB) may carry a password.
  for (const auto& [k, v] : env) out[k] = IsSecretName(k) ? "<redacted>" : RedactedLocation(v);
  return out;
}

std::string FileSha256(const std::string& path) {
  std::optional<FileDigest> digest = DigestFile(path);
  return digest ? digest->sha256 : "";
}

json ReproCache::Interpreter(const std::string& name) {
  auto it = interpreters_.find(name);
  if (it != interpreters_.end()) return it->second;
  json info = {{"name", name}};
  const std::string base = name.substr(name.rfind('/') + 1);
  if (base.starts_with("python")) {
    if (auto out = Capture({name, "-c", kPythonPackages})) {
      json parsed = json::parse(*out, nullptr, false);
      if (parsed.is_object()) {
        info["path"] = parsed.value("executable", "");
        info["version"] = parsed.value("version", "");
        info["packages"] = parsed.value("packages", json::object());
      }
    }
  } else if (auto out = Capture({name, "--version"})) {
    info["version"] = std::string(Trim(std::string_view(*out).substr(0, out->find('\n'))));
  }
  return interpreters_[name] = info;
}

std::string ReproCache::Sha256(const std::string& path) {
  auto it = hashes_.find(path);
  if (it != hashes_.end()) return it->second;
  return hashes_[path] = FileSha256(path);
}

json ReproCache::Git(const std::string& dir) {
  auto it = git_.find(dir);
  if (it != git_.end()) return it->second;
  return git_[dir] = GitInfo(dir, Env::Default());
}

std::string ReproCache::DriverVersion() {
  if (!driver_) {
    auto lib = nvml::Library::Open(Env::Default());
    driver_ = lib.ok() ? (*lib)->DriverVersion() : "";
  }
  return *driver_;
}

json ReproRecord(const PlannedRun& run, ReproCache& cache) {
  json r = {
      {"command", run.command}, {"params", run.params}, {"env", FilteredEnvironment(run.env)}};
  if (!run.script.empty()) {
    json script = {{"path", run.script}};
    json git = cache.Git(DirName(run.script));
    if (!git.is_null()) script["git"] = git;
    r["script"] = script;
  }
  if (!run.interpreter.empty()) r["interpreter"] = cache.Interpreter(run.interpreter);
  if (!run.devices.empty()) {
    if (std::string driver = cache.DriverVersion(); !driver.empty()) r["driver"] = driver;
  }
  json inputs = json::object();
  for (const auto& path : run.inputs) {
    std::string sha = cache.Sha256(path);
    inputs[path] = TextOrNull(sha);  // null: could not be read
  }
  r["inputs"] = inputs;
  return r;
}

std::vector<std::string> ReproDifferences(const std::string& meta_a, const std::string& meta_b) {
  json a = json::parse(meta_a, nullptr, false), b = json::parse(meta_b, nullptr, false);
  if (!a.is_object() || !b.is_object() || !a.contains("repro") || !b.contains("repro")) return {};
  const json &ra = a["repro"], &rb = b["repro"];
  std::vector<std::string> out;
  auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : JsonText(v); };
  // Members of one object of both records, compared by name.
  auto compare_map = [&](const json& x, const json& y, const std::string& label) {
    json ox = x.is_object() ? x : json::object(), oy = y.is_object() ? y : json::object();
    for (auto& [k, v] : ox.items()) {
      if (!oy.contains(k)) {
        out.push_back(label + " " + k + ": " + text(v) + " vs (absent)");
      } else if (oy[k] != v) {
        out.push_back(label + " " + k + ": " + text(v) + " vs " + text(oy[k]));
      }
    }
    for (auto& [k, v] : oy.items()) {
      if (!ox.contains(k)) out.push_back(label + " " + k + ": (absent) vs " + text(v));
    }
  };
  auto value = [](const json& o, const char* k) {
    return o.is_object() && o.contains(k) ? o[k] : json();
  };
  if (value(ra, "command") != value(rb, "command")) {
    out.push_back("command: " + text(value(ra, "command")) + " vs " + text(value(rb, "command")));
  }
  compare_map(value(ra, "params"), value(rb, "params"), "param");
  compare_map(value(ra, "env"), value(rb, "env"), "env");
  json sa = value(value(ra, "script"), "git"), sb = value(value(rb, "script"), "git");
  compare_map(sa, sb, "script git");
  json ia = value(ra, "interpreter"), ib = value(rb, "interpreter");
  for (const char* k : {"path", "version"}) {
    if (value(ia, k) != value(ib, k)) {
      out.push_back(std::string("interpreter ") + k + ": " + text(value(ia, k)) + " vs " +
                    text(value(ib, k)));
    }
  }
  compare_map(value(ia, "packages"), value(ib, "packages"), "package");
  if (value(ra, "driver") != value(rb, "driver")) {
    out.push_back("driver: " + text(value(ra, "driver")) + " vs " + text(value(rb, "driver")));
  }
  compare_map(value(ra, "inputs"), value(rb, "inputs"), "input");
  // The machine: hardware as footprint records it for every run.
  compare_map(value(a, "hardware"), value(b, "hardware"), "hardware");
  return out;
}

}  // namespace footprint::experiment
