// A resident command (footprint evaluate's agent, loaded once) serving the loads of several
// runs: each run's CPU per query is its own load's, checked against the command's own
// getrusage() over each load, and the command is started once.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "footprint/store.h"
#include "load/resident_command.h"
#include "test_util.h"

namespace footprint {
namespace {

// A SUT of the line protocol that burns 0.5 s of CPU before its first `ready` (a model
// loading), then `burn_ms` of CPU per query (the `#run` line's setting), and logs, at each
// `#end`, its own CPU time (getrusage) since the `#run` before it, with its pid.
constexpr char kResidentSut[] = R"(import json, os, resource, sys, time
log = open(sys.argv[1], "a")
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
log.write(json.dumps({"started": os.getpid()}) + "\n")
burn(0.5)
print("ready", flush=True)
settings, since = {}, 0.0
for line in sys.stdin:
    head, _, payload = line.rstrip("\n").partition("\t")
    if head == "#run":
        settings, since = json.loads(payload), cpu()
    elif head == "#end":
        log.write(json.dumps({"run_id": settings["run_id"], "pid": os.getpid(),
                              "cpu_s": cpu() - since}) + "\n")
        log.flush()
    else:
        burn(settings["burn_ms"] / 1000)
        print(f"{head}\tok", flush=True)
        continue
    print("ready", flush=True)
)";

TEST(ResidentLoad, EachRunChargesItsOwnLoadAndTheCommandStartsOnce) {
  testing::TempDir dir;
  const std::string script = dir.File("sut.py"), log = dir.File("sut.log");
  std::ofstream(script) << kResidentSut;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok()) << store.status().message();
  const std::vector<std::string> argv = {"/usr/bin/python3", script, log};
  auto command = ResidentCommand::Start(argv, 60'000'000'000);
  ASSERT_TRUE(command.ok()) << command.status().message();
  EXPECT_GE((*command)->ready_s(), 0.5);  // its start-up, in no run

  std::map<std::string, double> load_cpu_s;
  for (int burn_ms : {10, 20, 40}) {
    LoadOptions load;
    load.min_duration_ns = 0;
    load.min_queries = 10;
    MonitorOptions o;
    o.command = argv;
    o.name = "resident-" + std::to_string(burn_ms);
    o.record_git = false;
    LoadDriver driver(load, {}, &(*command)->transport());
    auto out = RunResidentLoad(**store, o, **command, driver, {{"burn_ms", burn_ms}});
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(out->run.status, RunStatus::kOk);
    EXPECT_TRUE(driver.resident_ready());
    EXPECT_EQ(driver.summary().completed, 10);
    ASSERT_TRUE(driver.summary().cpu_s);
    load_cpu_s[out->run.id] = *driver.summary().cpu_s;
    // The run's own CPU total covers the load and the two control lines, not the start-up's
    // 0.5 s.
    const double run_cpu = out->totals.at("cpu_user_s") + out->totals.at("cpu_system_s");
    EXPECT_GE(run_cpu, *driver.summary().cpu_s - 0.02);
    EXPECT_LT(run_cpu, *driver.summary().cpu_s + 0.25);
  }
  EXPECT_EQ((*command)->End(), 0);

  // The command's own account of each load, against what each run says.
  std::ifstream in(log);
  int starts = 0, loads = 0;
  for (std::string line; std::getline(in, line);) {
    const auto entry = nlohmann::json::parse(line);
    if (entry.contains("started")) {
      ++starts;
      EXPECT_EQ(entry["started"], (*command)->pid());
      continue;
    }
    ++loads;
    EXPECT_EQ(entry["pid"], (*command)->pid());
    const double own = entry["cpu_s"];
    const double measured = load_cpu_s.at(entry["run_id"]);
    // Two readings of 10 ms ticks, and the control lines' work, which its own figure includes.
    EXPECT_NEAR(measured, own, 0.03 + 0.05 * own) << line;
  }
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(loads, 3);
}

// A stop signal to footprint (not to the command) mid-load: the command is stopped, the load
// ends, and the run is stored as interrupted instead of footprint dying with it.
TEST(ResidentLoad, AStopSignalStoresTheRunAsInterrupted) {
  testing::TempDir dir;
  const std::string script = dir.File("sut.py");
  std::ofstream(script) << kResidentSut;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok()) << store.status().message();
  const std::vector<std::string> argv = {"/usr/bin/python3", script, dir.File("sut.log")};
  auto command = ResidentCommand::Start(argv, 60'000'000'000);
  ASSERT_TRUE(command.ok()) << command.status().message();
  LoadOptions load;
  load.min_duration_ns = 60'000'000'000;  // far longer than the test waits
  MonitorOptions o;
  o.command = argv;
  o.record_git = false;
  LoadDriver driver(load, {}, &(*command)->transport());
  std::thread signal_soon([] {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ::kill(::getpid(), SIGTERM);
  });
  auto out = RunResidentLoad(**store, o, **command, driver, {{"burn_ms", 1}});
  signal_soon.join();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->signal_received, SIGTERM);
  EXPECT_EQ(out->run.status, RunStatus::kInterrupted);
  EXPECT_NE(driver.summary().ended_because, "done");
  EXPECT_FALSE(driver.resident_ready());
  EXPECT_GT(driver.summary().completed, 0);
  EXPECT_EQ((*command)->End(), 128 + SIGTERM);
}

}  // namespace
}  // namespace footprint
