// footprint doctor: what can be measured here, and why not where not.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/format.h"
#include "footprint/doctor.h"
#include "util/json_text.h"

namespace footprint::cli {

Action AddDoctor(CLI::App& app) {
  auto as_json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "doctor", "Say which probes work on this machine and, for each that does not, why.");
  cmd->add_flag("--json", *as_json, "print a JSON array of checks (stable API)");
  cmd->footer("Exits 0; a check that fails says why and what would enable it.");
  return [as_json]() -> int {
    std::vector<DoctorCheck> checks = RunDoctor();
    if (*as_json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& c : checks) {
        out.push_back({{"check", c.name},
                       {"ok", c.ok},
                       {"detail", c.detail},
                       {"enables", c.metrics},
                       {"lines", c.lines}});
      }
      std::cout << JsonText(out, 2) << "\n";
      return kExitOk;
    }
    Table t({"", "CHECK", "DETAIL"});
    for (const auto& c : checks) {
      t.Add({c.ok ? "ok" : "NO", c.name, c.detail});
      for (const std::string& line : c.lines) t.Add({"", "", "  " + line});
    }
    t.Print(std::cout);
    return kExitOk;
  };
}

}  // namespace footprint::cli
