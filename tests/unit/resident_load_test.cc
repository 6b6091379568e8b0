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

#include "fake_env.h"
#include "footprint/store.h"
#include "load/resident_command.h"
#include "test_util.h"
#include "util/clock.h"

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

// The SUT above, started as a resident command (logging to sut.log in the test's folder), and
// a store for its runs.
class ResidentLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_.File("sut.py")) << kResidentSut;
    auto store = OpenStore(dir_.File("fp.db"));
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(store).value();
    auto command = ResidentCommand::Start(argv_, 60'000'000'000);
    ASSERT_TRUE(command.ok()) << command.status().message();
    command_ = std::move(command).value();
  }

  footprint::testing::TempDir dir_;
  const std::vector<std::string> argv_ = {"/usr/bin/python3", dir_.File("sut.py"),
                                          dir_.File("sut.log")};
  std::unique_ptr<Store> store_;
  std::unique_ptr<ResidentCommand> command_;
};

TEST_F(ResidentLoad, EachRunChargesItsOwnLoadAndTheCommandStartsOnce) {
  EXPECT_GE(command_->ready_s(), 0.5);  // its start-up, in no run

  std::map<std::string, double> load_cpu_s;
  for (int burn_ms : {10, 20, 40}) {
    LoadOptions load;
    load.min_duration_ns = 0;
    load.min_queries = 10;
    MonitorOptions o;
    o.command = argv_;
    o.name = "resident-" + std::to_string(burn_ms);
    o.record_git = false;
    LoadDriver driver(load, {}, &command_->transport());
    auto out = RunResidentLoad(*store_, o, *command_, driver, {{"burn_ms", burn_ms}});
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
  EXPECT_EQ(command_->End(), 0);

  // The command's own account of each load, against what each run says.
  std::ifstream in(dir_.File("sut.log"));
  int starts = 0, loads = 0;
  for (std::string line; std::getline(in, line);) {
    const auto entry = nlohmann::json::parse(line);
    if (entry.contains("started")) {
      ++starts;
      EXPECT_EQ(entry["started"], command_->pid());
      continue;
    }
    ++loads;
    EXPECT_EQ(entry["pid"], command_->pid());
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
TEST_F(ResidentLoad, AStopSignalStoresTheRunAsInterrupted) {
  LoadOptions load;
  load.min_duration_ns = 60'000'000'000;  // far longer than the test waits
  MonitorOptions o;
  o.command = argv_;
  o.record_git = false;
  LoadDriver driver(load, {}, &command_->transport());
  std::thread signal_soon([] {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ::kill(::getpid(), SIGTERM);
  });
  auto out = RunResidentLoad(*store_, o, *command_, driver, {{"burn_ms", 1}});
  signal_soon.join();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->signal_received, SIGTERM);
  EXPECT_EQ(out->run.status, RunStatus::kInterrupted);
  EXPECT_NE(driver.summary().ended_because, "done");
  EXPECT_FALSE(driver.resident_ready());
  EXPECT_GT(driver.summary().completed, 0);
  EXPECT_EQ(command_->End(), 128 + SIGTERM);
}

// The run waits for its load on its Env's clock, looking every 20 ms: on a driven clock that
// stands at 0 while the load runs and is let go to 20 ms once the load has finished, the run
// lasts exactly 20 ms, whatever the load took on the machine's clock.
TEST_F(ResidentLoad, TheRunAwaitsItsLoadOnTheEnvsClock) {
  LoadOptions load;
  load.min_duration_ns = 0;
  load.min_queries = 5;
  FakeEnv env;  // its horizon stands at 0
  MonitorOptions o;
  o.env = &env;
  o.command = argv_;
  o.record_git = false;
  LoadDriver driver(load, {}, &command_->transport());
  std::thread let_go([&] {
    while (!driver.finished()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    env.SetHorizon(20 * kNsPerMs);
  });
  auto out = RunResidentLoad(*store_, o, *command_, driver, {{"burn_ms", 1}});
  let_go.join();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->run.status, RunStatus::kOk);
  EXPECT_EQ(driver.summary().completed, 5);
  EXPECT_EQ(out->totals.at("duration_s"), 0.02);
  EXPECT_EQ(command_->End(), 0);
}

}  // namespace
}  // namespace footprint
