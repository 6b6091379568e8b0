// The queue of footprint serve: its tables in a footprint database (job_queue.h), what a job
// may name and override (job_spec.h), and the API's roles, form tokens and limits
// (queue_api.h), the API's clock driven through FakeEnv. The runner: job_runner_test.cc and,
// with a real serve, tests/integration/test_queue.py.
#include "serve/job_queue.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "fake_env.h"
#include "footprint/store.h"
#include "serve/job_spec.h"
#include "serve/queue_api.h"
#include "test_util.h"
#include "util/clock.h"

namespace footprint::serve {
namespace {

using footprint::testing::TempDir;

class JobQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(OpenStore(db_).ok());  // a footprint database, as serve is given
    auto queue = JobQueue::Open(db_);
    ASSERT_TRUE(queue.ok()) << queue.status().message();
    queue_ = std::move(*queue);
  }
  JobRequest Plan(std::string target = "cpu", int priority = 0) {
    return {.kind = "plan", .file = "p.csv", .target = std::move(target), .priority = priority};
  }

  TempDir dir_;
  std::string db_ = dir_.File("fp.db");
  std::unique_ptr<JobQueue> queue_;
};

TEST_F(JobQueueTest, RefusesFilesThatAreNotFootprintDatabases) {
  std::ofstream(dir_.File("other.db")) << "";
  auto empty = JobQueue::Open(dir_.File("other.db"));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("not a footprint database"), std::string::npos);
  EXPECT_FALSE(JobQueue::Open(dir_.File("missing.db")).ok());
  EXPECT_EQ(JobQueue::Open("postgresql://db/x").status().code(), StatusCode::kUnsupported);
}

// A write that finds the database locked by another connection (a footprint run writing)
// waits the store's busy timeout on the Env's clock, then fails saying so: on the driven
// clock the 30 s pass at once and end exactly at the timeout.
TEST_F(JobQueueTest, AWriteToALockedDatabaseGivesUpAtItsTimeoutOnTheEnvsClock) {
  FakeEnv env;
  env.SetHorizon(INT64_MAX);
  auto queue = JobQueue::Open(db_, env);
  ASSERT_TRUE(queue.ok()) << queue.status().message();
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto refused = (*queue)->Add(Plan(), "ann");
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("locked"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(env.MonotonicNs(), int64_t{StoreOptions{}.busy_timeout_ms} * kNsPerMs);
  EXPECT_EQ(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  EXPECT_TRUE((*queue)->Add(Plan(), "ann").ok());
}

TEST_F(JobQueueTest, StartsByPriorityThenAgeOnePerTarget) {
  const int64_t low = *queue_->Add(Plan("cpu", 0), "ann");
  const int64_t high = *queue_->Add(Plan("cpu", 5), "ann");
  const int64_t gpu = *queue_->Add(Plan("gpu:1", 0), "bob");
  auto first = queue_->ClaimNext("cpu");
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((*first)->id, high);
  EXPECT_EQ((*first)->state, JobState::kRunning);
  EXPECT_EQ((**queue_->ClaimNext("cpu")).id, low);
  EXPECT_FALSE(queue_->ClaimNext("cpu")->has_value());
  EXPECT_EQ(*queue_->WaitingTargets(), std::vector<std::string>{"gpu:1"});
  EXPECT_EQ((**queue_->ClaimNext("gpu:1")).id, gpu);
}

TEST_F(JobQueueTest, CancelEndsQueuedJobsAndAsksForRunningOnes) {
  const int64_t running = *queue_->Add(Plan(), "ann");
  const int64_t queued = *queue_->Add(Plan(), "ann");
  ASSERT_TRUE(queue_->ClaimNext("cpu").ok());
  // Another's jobs need an admin; nothing changes when one id is refused.
  EXPECT_FALSE(queue_->Cancel({running, queued}, "bob", false).ok());
  EXPECT_EQ(queue_->Get(queued)->state, JobState::kQueued);
  ASSERT_TRUE(queue_->Cancel({running, queued}, "ann", false).ok());
  EXPECT_EQ(queue_->Get(queued)->state, JobState::kCancelled);
  EXPECT_EQ(queue_->Get(running)->state, JobState::kRunning);
  EXPECT_EQ(*queue_->CancelRequested(), std::vector<int64_t>{running});
  ASSERT_TRUE(queue_->Finish(running, JobState::kCancelled, 143, "cancelled").ok());
  EXPECT_TRUE(queue_->CancelRequested()->empty());
  EXPECT_EQ(queue_->Get(999).status().code(), StatusCode::kNotFound);
}

TEST_F(JobQueueTest, RequeueCopiesEndedJobsOnly) {
  const int64_t id = *queue_->Add(Plan("gpu:0", 3), "ann");
  EXPECT_FALSE(queue_->Requeue({id}, "ann", false).ok());  // still queued
  ASSERT_TRUE(queue_->Cancel({id}, "ann", false).ok());
  auto again = queue_->Requeue({id}, "ann", false);
  ASSERT_TRUE(again.ok()) << again.status().message();
  const Job copy = *queue_->Get(again->front());
  EXPECT_EQ(copy.state, JobState::kQueued);
  EXPECT_EQ(copy.requeued_from, id);
  EXPECT_EQ(copy.request.target, "gpu:0");
  EXPECT_EQ(copy.request.priority, 3);
}

TEST_F(JobQueueTest, ARestartMarksWhatRanAsInterrupted) {
  const int64_t id = *queue_->Add(Plan(), "ann");
  ASSERT_TRUE(queue_->ClaimNext("cpu").ok());
  const int64_t waiting = *queue_->Add(Plan(), "ann");
  queue_.reset();  // the serve that ran it is gone
  auto reopened = JobQueue::Open(db_);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(*(*reopened)->MarkInterrupted(), 1);
  const Job job = *(*reopened)->Get(id);
  EXPECT_EQ(job.state, JobState::kFailed);
  EXPECT_TRUE(job.reason.starts_with("interrupted:"));
  EXPECT_EQ((*reopened)->Get(waiting)->state, JobState::kQueued);
}

TEST_F(JobQueueTest, KeepsOutputInOrderUpToItsCap) {
  const int64_t id = *queue_->Add(Plan(), "ann");
  ASSERT_TRUE(queue_->ClaimNext("cpu").ok());
  ASSERT_TRUE(queue_->AppendLog(id, "out", "one\n").ok());
  ASSERT_TRUE(queue_->AppendLog(id, "err", "two\n").ok());
  auto chunks = queue_->LogAfter(id, 0);
  ASSERT_EQ(chunks->size(), 2u);
  EXPECT_EQ((*chunks)[1].stream, "err");
  EXPECT_EQ(queue_->LogAfter(id, (*chunks)[0].seq)->front().text, "two\n");
  const std::string mib(1 << 20, 'x');
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(queue_->AppendLog(id, "out", mib).ok());
  int64_t kept = 0;
  const std::vector<JobLogChunk> all = *queue_->LogAfter(id, 0);
  for (const JobLogChunk& c : all) kept += static_cast<int64_t>(c.text.size());
  EXPECT_GE(kept, kMaxJobLogBytes);
  EXPECT_LT(kept, kMaxJobLogBytes + 200);  // and the line saying so
}

TEST_F(JobQueueTest, RefusesJobsPastItsLimit) {
  for (int64_t i = 1; i < kMaxActiveJobs; ++i) ASSERT_TRUE(queue_->Add(Plan(), "ann").ok());
  const int64_t last = *queue_->Add(Plan(), "ann");  // the limit's own
  auto refused = queue_->Add(Plan(), "ann");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("its limit"), std::string::npos);
  ASSERT_TRUE(queue_->Cancel({last}, "ann", false).ok());  // one ended: room for one more
  EXPECT_TRUE(queue_->Add(Plan(), "ann").ok());
}

TEST_F(JobQueueTest, AuditRowsSayWhoDidWhat) {
  ASSERT_TRUE(queue_->Audit("ann", "launch", 7, "plan p.csv on cpu").ok());
  ASSERT_TRUE(queue_->Audit("bob", "cancel", 7, "").ok());
  auto rows = queue_->AuditLog();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].who, "bob");
  EXPECT_EQ((*rows)[1].action, "launch");
  EXPECT_EQ((*rows)[1].job_id, 7);
}

class JobCatalogTest : public JobQueueTest {
 protected:
  void SetUp() override {
    JobQueueTest::SetUp();
    std::filesystem::create_directories(dir_.File("m"));
    std::filesystem::create_directories(dir_.File("p"));
    std::ofstream(dir_.File("m/small.yaml")) << R"(name: small
model: {torchvision: resnet18}
batch_sizes: [2]
scenarios:
  single: {duration: 1s}
  server: {qps: 5, duration: 1s}
)";
    std::ofstream(dir_.File("p/plan.csv"))
        << "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n"
           "e,w,,,0,-,/bin/true,none,\n";
    std::ofstream(dir_.File("secret.yaml")) << "name: secret\n";
    std::filesystem::create_symlink(dir_.File("secret.yaml"), dir_.File("m/link.yaml"));
  }
  JobCatalog catalog_{{dir_.File("m"), dir_.File("p")}, "/usr/bin/footprint", "/db", ""};
};

TEST_F(JobCatalogTest, NamesOnlyRegularFilesInsideTheFolders) {
  for (const char* file : {"../secret.yaml", "/etc/passwd", "link.yaml", "", "./small.yaml"}) {
    auto checked = catalog_.Check({.kind = "evaluate", .file = file});
    EXPECT_FALSE(checked.ok()) << file;
  }
  EXPECT_EQ(catalog_.Check({.kind = "evaluate", .file = "none.yaml"}).status().code(),
            StatusCode::kNotFound);
  ASSERT_EQ(::mkfifo(dir_.File("m/pipe.yaml").c_str(), 0600), 0);  // never opened: it blocks
  EXPECT_FALSE(catalog_.Check({.kind = "evaluate", .file = "pipe.yaml"}).ok());
  EXPECT_FALSE(catalog_.Check({.kind = "shell", .file = "small.yaml"}).ok());
  EXPECT_FALSE(catalog_.Check({.kind = "plan", .file = "plan.csv", .target = "gpu:x"}).ok());
  EXPECT_FALSE(
      catalog_.Check({.kind = "plan", .file = "plan.csv", .overrides = {{"model", "x"}}}).ok());
  EXPECT_EQ(catalog_.Check({.kind = "plan", .file = "plan.csv"})->target, "cpu");
  // Its rows use GPU 0: it may hold gpu:0, never run on gpu:1's turn.
  EXPECT_TRUE(catalog_.Check({.kind = "plan", .file = "plan.csv", .target = "gpu:0"}).ok());
  auto other = catalog_.Check({.kind = "plan", .file = "plan.csv", .target = "gpu:1"});
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("uses GPU 0"), std::string::npos);
}

TEST_F(JobCatalogTest, OverridesReplaceWhatTheManifestSays) {
  const JobRequest request{.kind = "evaluate",
                           .file = "small.yaml",
                           .overrides = {{"device", "cuda:1"},
                                         {"batch_sizes", "1,8"},
                                         {"scenario", "server"},
                                         {"qps", "7,9"},
                                         {"model", "mobilenet_v3_small"}}};
  auto checked = catalog_.Check(request);
  ASSERT_TRUE(checked.ok()) << checked.status().message();
  EXPECT_EQ(checked->target, "gpu:1");
  EXPECT_FALSE(catalog_
                   .Check({.kind = "evaluate",
                           .file = "small.yaml",
                           .overrides = {{"device", "cuda:1"}},
                           .target = "cpu"})
                   .ok());
  auto launch = catalog_.Prepare(*checked, 4, dir_.path());
  ASSERT_TRUE(launch.ok()) << launch.status().message();
  const YAML::Node copy = YAML::Load(launch->manifest_text);
  EXPECT_EQ(copy["framework"]["device"].as<std::string>(), "cuda:1");
  EXPECT_EQ(copy["model"]["torchvision"].as<std::string>(), "mobilenet_v3_small");
  EXPECT_EQ(copy["batch_sizes"][1].as<int>(), 8);
  EXPECT_EQ(copy["scenarios"].size(), 1u);
  EXPECT_EQ(copy["scenarios"]["server"]["qps"][0].as<std::string>(), "7");
  EXPECT_EQ(launch->command, (std::vector<std::string>{"/usr/bin/footprint", "evaluate", "-o",
                                                       "/db", dir_.File("job-4.yaml")}));
  for (auto [key, value] : {std::pair{"batch_sizes", "0"},
                            {"device", "tpu"},
                            {"qps", "1;rm"},
                            {"scenario", "multi"},
                            {"threads", "4"}}) {
    EXPECT_FALSE(
        catalog_.Check({.kind = "evaluate", .file = "small.yaml", .overrides = {{key, value}}})
            .ok())
        << key << "=" << value;
  }
}

TEST_F(JobCatalogTest, PlansRunOnTheirTarget) {
  auto cpu = catalog_.Prepare({.kind = "plan", .file = "plan.csv", .target = "cpu"}, 1, "/w");
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  EXPECT_EQ(cpu->command.back(), "cpu");  // --devices cpu: the runs see no GPU
  auto slurm =
      catalog_.Prepare({.kind = "plan", .file = "plan.csv", .target = "slurm:debug"}, 1, "/w");
  ASSERT_TRUE(slurm.ok());
  EXPECT_EQ(slurm->command.back(), "--sbatch=-p debug");
  EXPECT_EQ(cpu->cwd, dir_.File("p"));
}

TEST_F(JobCatalogTest, ALoadDrivesASystemUnderTestOfThePlansFolder) {
  std::ofstream(dir_.File("p/sut.py")) << "print('ready')\n";
  const JobRequest request{
      .kind = "load",
      .file = "sut.py",
      .overrides = {{"scenario", "server"}, {"qps", "5"}, {"min_queries", "20"}}};
  auto launch = catalog_.Prepare(request, 2, dir_.path());
  ASSERT_TRUE(launch.ok()) << launch.status().message();
  EXPECT_EQ(launch->command,
            (std::vector<std::string>{"/usr/bin/footprint", "load", "-o", "/db", "-n", "sut.py",
                                      "--min-queries", "20", "--qps", "5", "--scenario", "server",
                                      "--", "python3", dir_.File("p/sut.py")}));
  EXPECT_EQ(launch->cwd, dir_.File("p"));
  for (auto [key, value] : {std::pair{"qps", "5; rm -rf /"}, {"model", "x"}}) {
    EXPECT_FALSE(catalog_
                     .Check({.kind = "load",
                             .file = "sut.py",
                             .overrides = {{"scenario", "single"}, {key, value}}})
                     .ok())
        << key;
  }
  EXPECT_FALSE(catalog_.Check({.kind = "load", .file = "sut.py"}).ok());  // no scenario
  EXPECT_FALSE(catalog_
                   .Check({.kind = "load",
                           .file = "sut.py",
                           .overrides = {{"scenario", "single"}},
                           .target = "slurm:debug"})
                   .ok());
}

class QueueApiTest : public JobCatalogTest {
 protected:
  void SetUp() override {
    JobCatalogTest::SetUp();
    api_ = std::make_unique<QueueApi>(
        *queue_, catalog_, [this] { ++wakes_; }, env_);
  }
  ApiResponse Send(const std::string& method, const std::string& path, Role role,
                   const std::string& body = "", std::string form_token = "") {
    return api_->Handle({.method = method,
                         .path = path,
                         .body = body,
                         .content_type = "application/json",
                         .form_token = std::move(form_token),
                         .caller = {.name = "ann", .role = role}});
  }
  std::string FormToken(Role role) {
    return nlohmann::json::parse(Send("GET", "/api/queue/form", role).body)["form_token"];
  }
  FakeEnv env_;  // its clock stands still unless a test moves it
  int wakes_ = 0;
  std::unique_ptr<QueueApi> api_;
};

TEST_F(QueueApiTest, LaunchingNeedsTheRunRoleAndAFreshFormToken) {
  const std::string body = R"({"kind": "plan", "file": "plan.csv", "priority": 2})";
  EXPECT_EQ(Send("POST", "/api/queue", Role::kRead, body, FormToken(Role::kRead)).status, 403);
  EXPECT_EQ(Send("POST", "/api/queue", Role::kRun, body, "made-up").status, 403);
  EXPECT_TRUE(queue_->List()->empty());  // nothing was queued
  const std::string token = FormToken(Role::kRun);
  const ApiResponse launched = Send("POST", "/api/queue", Role::kRun, body, token);
  ASSERT_EQ(launched.status, 201) << launched.body;
  EXPECT_EQ(wakes_, 1);
  EXPECT_EQ(Send("POST", "/api/queue", Role::kRun, body, token).status, 403);  // used once
  const std::string huge = R"({"kind": "plan", "file": ")" + std::string(70'000, 'a') + "\"}";
  EXPECT_EQ(Send("POST", "/api/queue", Role::kRun, huge, FormToken(Role::kRun)).status, 413);
  auto audit = queue_->AuditLog();
  ASSERT_EQ(audit->size(), 1u);
  EXPECT_EQ((*audit)[0].who, "ann");
  EXPECT_EQ(Send("GET", "/api/queue/audit", Role::kRun).status, 403);
  EXPECT_EQ(Send("GET", "/api/queue/audit", Role::kAdmin).status, 200);
}

TEST_F(QueueApiTest, OthersJobsNeedAnAdmin) {
  const int64_t id = *queue_->Add({.kind = "plan", .file = "plan.csv", .target = "cpu"}, "bob");
  const std::string body = "{\"ids\": [" + std::to_string(id) + "]}";
  EXPECT_EQ(Send("POST", "/api/queue/cancel", Role::kRun, body, FormToken(Role::kRun)).status, 403);
  EXPECT_EQ(queue_->Get(id)->state, JobState::kQueued);
  EXPECT_EQ(Send("POST", "/api/queue/cancel", Role::kAdmin, body, FormToken(Role::kAdmin)).status,
            200);
  EXPECT_EQ(queue_->Get(id)->state, JobState::kCancelled);
}

TEST_F(QueueApiTest, AFormTokenLivesAnHourOnTheEnvsClock) {
  const std::string body = R"({"kind": "plan", "file": "plan.csv"})";
  const std::string on_time = FormToken(Role::kRun), late = FormToken(Role::kRun);
  env_.Advance(kFormTokenLifeNs);
  EXPECT_EQ(Send("POST", "/api/queue", Role::kRun, body, on_time).status, 201);
  env_.Advance(1);
  EXPECT_EQ(Send("POST", "/api/queue", Role::kRun, body, late).status, 403);
  EXPECT_EQ(queue_->List()->size(), 1u);
}

// The stream of a job's output looks at the queue every 100 ms of the Env's clock and says
// it waits after each 2 s without output: on the driven clock, exactly so, with no real wait.
TEST_F(QueueApiTest, AQuietEventStreamWaitsOnTheEnvsClockUntilItsJobEnds) {
  const int64_t id = *queue_->Add(Plan(), "ann");
  const ApiResponse events =
      Send("GET", "/api/queue/" + std::to_string(id) + "/events", Role::kRead);
  ASSERT_TRUE(events.stream);
  env_.SetHorizon(int64_t{10'000'000'000});
  std::ostringstream out;
  bool streamed = false;
  std::thread reader([&] { streamed = events.stream(out); });
  env_.AwaitParked();  // at 10 s, its next look due at 10.1 s
  std::string text = out.str();
  size_t waits = 0;
  for (size_t at = text.find(": waiting"); at != std::string::npos;
       at = text.find(": waiting", at + 1)) {
    ++waits;
  }
  EXPECT_EQ(waits, 4u) << text;  // at 2.1, 4.2, 6.3 and 8.4 s
  EXPECT_EQ(text.find("event: end"), std::string::npos) << text;
  ASSERT_TRUE(queue_->AppendLog(id, "out", "last words\n").ok());
  ASSERT_TRUE(queue_->Finish(id, JobState::kDone, 0, "").ok());
  env_.SetHorizon(int64_t{20'000'000'000});
  reader.join();
  EXPECT_TRUE(streamed);
  text = out.str();
  EXPECT_NE(text.find("last words"), std::string::npos) << text;
  EXPECT_NE(text.find("event: end"), std::string::npos) << text;
  EXPECT_EQ(env_.MonotonicNs(), int64_t{10'100'000'000});  // it ended at the first look after
}

TEST(TokenGrants, ReadsRolesAndRefusesBadLines) {
  TempDir dir;
  std::ofstream(dir.File("tokens")) << "# role name token\nrun ann 0123456789abcdef0123\n"
                                       "read bob fedcba9876543210fedc  # a comment\n";
  auto grants = ReadTokenGrants(dir.File("tokens"));
  ASSERT_TRUE(grants.ok()) << grants.status().message();
  ASSERT_EQ(grants->size(), 2u);
  EXPECT_EQ((*grants)[0].caller.role, Role::kRun);
  EXPECT_EQ((*grants)[1].caller.name, "bob");
  std::ofstream(dir.File("bad")) << "owner ann 0123456789abcdef0123\n";
  EXPECT_NE(ReadTokenGrants(dir.File("bad")).status().message().find("line 1"), std::string::npos);
  std::ofstream(dir.File("short")) << "run ann short\n";
  EXPECT_FALSE(ReadTokenGrants(dir.File("short")).ok());
  // The token itself is checked, once read: ';' and ',' would split the header that carries it.
  std::ofstream(dir.File("separator")) << "run ann 0123456789;abcdef0123\n";
  EXPECT_FALSE(ReadTokenGrants(dir.File("separator")).ok());
}

}  // namespace
}  // namespace footprint::serve
