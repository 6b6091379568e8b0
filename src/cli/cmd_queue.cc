// footprint queue: the queue of `footprint serve` from the shell (src/serve/job_queue.h,
// docs/evaluation.md): add, list, cancel and requeue jobs, read a job's output.
#include <iostream>
#include <memory>

#include "cli/cli.h"
#include "cli/format.h"
#include "footprint/env.h"
#include "serve/job_queue.h"
#include "serve/job_spec.h"
#include "util/host.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace footprint::cli {
namespace {

struct QueueArgs {
  std::string db;
  serve::JobFolders folders;
  serve::JobRequest request;
  std::vector<std::string> sets;
  std::vector<int64_t> ids;
  bool json = false;
};

// Who the shell's user is in the audit rows: whoever may write the database file may change
// its queue, so the command line acts as an admin.
std::string ShellUser() { return UserName(Env::Default().Var("USER")) + " (shell)"; }

Result<int> Add(QueueArgs& args, serve::JobQueue& queue) {
  for (const std::string& set : args.sets) {
    const size_t eq = set.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument("--set takes KEY=VALUE, not '" + set + "'");
    }
    args.request.overrides[set.substr(0, eq)] = set.substr(eq + 1);
  }
  const serve::JobCatalog catalog(args.folders, "", args.db, "");
  FP_ASSIGN_OR_RETURN(serve::JobRequest request, catalog.Check(args.request));
  FP_ASSIGN_OR_RETURN(int64_t id, queue.Add(request, ShellUser()));
  FP_RETURN_IF_ERROR(queue.Audit(ShellUser(), "launch", id,
                                 request.kind + " " + request.file + " on " + request.target));
  std::cout << id << "\n";
  std::cerr << "footprint: job " << id << " queued for " << request.target
            << "; a footprint serve with the same folders runs it\n";
  return kExitOk;
}

Result<int> List(const QueueArgs& args, serve::JobQueue& queue) {
  FP_ASSIGN_OR_RETURN(std::vector<serve::Job> jobs, queue.List());
  if (args.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const serve::Job& job : jobs) out.push_back(serve::JobJson(job));
    std::cout << JsonText(out, 2) << "\n";
    return kExitOk;
  }
  Table table({"id", "state", "target", "prio", "kind", "file", "owner", "queued (UTC)", "reason"},
              {0, 3});
  for (const serve::Job& job : jobs) {
    table.Add({std::to_string(job.id), std::string(serve::JobStateName(job.state)),
               Inert(job.request.target), std::to_string(job.request.priority), job.request.kind,
               Inert(job.request.file), Inert(job.owner), FormatUtc(job.queued_at_ns),
               Inert(job.reason)});
  }
  table.Cap(8, 60);
  table.Print(std::cout);
  return kExitOk;
}

Result<int> Log(const QueueArgs& args, serve::JobQueue& queue) {
  if (args.ids.size() != 1) return InvalidArgument("log takes one job id");
  FP_RETURN_IF_ERROR(queue.Get(args.ids.front()).status());
  int64_t after = 0;
  while (true) {
    FP_ASSIGN_OR_RETURN(std::vector<serve::JobLogChunk> chunks,
                        queue.LogAfter(args.ids.front(), after));
    if (chunks.empty()) return kExitOk;
    for (const serve::JobLogChunk& c : chunks)
      (c.stream == "err" ? std::cerr : std::cout) << c.text;
    after = chunks.back().seq;
  }
}

CLI::App* AddVerb(CLI::App& queue, const char* name, const char* help, QueueArgs& args) {
  CLI::App* verb = AddDbSubcommand(queue, name, help, args.db);
  verb->footer("Exit status and examples: footprint queue --help; the queue: docs/evaluation.md.");
  return verb;
}

// queue cancel: each job cancelled, and audited as the shell's user.
Result<int> CancelJobs(const QueueArgs& args, serve::JobQueue& queue) {
  FP_RETURN_IF_ERROR(queue.Cancel(args.ids, ShellUser(), true));
  for (int64_t id : args.ids) FP_RETURN_IF_ERROR(queue.Audit(ShellUser(), "cancel", id, ""));
  return kExitOk;
}

// queue requeue: each job queued again as a new one, whose id is printed.
Result<int> RequeueJobs(const QueueArgs& args, serve::JobQueue& queue) {
  FP_ASSIGN_OR_RETURN(std::vector<int64_t> ids, queue.Requeue(args.ids, ShellUser(), true));
  for (size_t i = 0; i < ids.size(); ++i) {
    FP_RETURN_IF_ERROR(
        queue.Audit(ShellUser(), "requeue", ids[i], "of job " + std::to_string(args.ids[i])));
    std::cout << ids[i] << "\n";
  }
  return kExitOk;
}

}  // namespace

Action AddQueue(CLI::App& app) {
  auto args = std::make_shared<QueueArgs>();
  CLI::App* cmd = app.add_subcommand(
      "queue",
      "The queue of footprint serve, from the shell: add evaluations and plans, list, cancel "
      "and requeue jobs, read a job's output. The queue lives in the database; a footprint "
      "serve started with --manifests/--plans runs its jobs, one at a time per target.");
  cmd->require_subcommand(1);
  CLI::App* add =
      AddVerb(*cmd, "add",
              "queue a manifest (evaluate), a plan (plan) or a system under test (load)", *args);
  add->add_option("kind", args->request.kind, "evaluate, plan or load")->required();
  add->add_option("file", args->request.file,
                  "its name inside --manifests (evaluate) or --plans (plan, load)")
      ->required();
  add->add_option("--manifests", args->folders.manifests, "the folder of manifests");
  add->add_option("--plans", args->folders.plans, "the folder of plans");
  add->add_option("--set", args->sets,
                  "KEY=VALUE override of a manifest (model, device, batch_sizes, scenario, qps) "
                  "or setting of a load (scenario, qps, duration, min_queries, latency_bound)");
  add->add_option("--target", args->request.target,
                  "cpu, gpu:N or slurm:PARTITION (an evaluation's follows its device)");
  add->add_option("--priority", args->request.priority, "-1000 to 1000, higher first (0)");
  CLI::App* list = AddVerb(*cmd, "list", "the jobs, newest first", *args);
  list->add_flag("--json", args->json, "as JSON");
  CLI::App* cancel = AddVerb(*cmd, "cancel", "cancel jobs (a running one: its processes)", *args);
  CLI::App* requeue = AddVerb(*cmd, "requeue", "queue ended jobs again, as new jobs", *args);
  CLI::App* log = AddVerb(*cmd, "log", "print a job's output as kept so far", *args);
  for (CLI::App* verb : {cancel, requeue, log}) {
    verb->add_option("ids", args->ids, "job ids")->required();
  }
  cmd->footer(
      "Exit status: 0 done, 2 a bad request (the file is not in its folder, an override the "
      "manifest cannot take, a full queue), 3 the database, 4 no such job. docs/evaluation.md.\n"
      "Examples:\n"
      "  footprint queue add --manifests manifests evaluate resnet18-cpu.yaml --set "
      "batch_sizes=1,8\n"
      "  footprint queue list\n"
      "  footprint queue cancel 12 13");
  return [args, add, list, cancel, requeue]() -> int {
    return ExitCodeOf([&]() -> Result<int> {
      FP_ASSIGN_OR_RETURN(std::unique_ptr<serve::JobQueue> queue, serve::JobQueue::Open(args->db));
      if (add->parsed()) return Add(*args, *queue);
      if (list->parsed()) return List(*args, *queue);
      if (cancel->parsed()) return CancelJobs(*args, *queue);
      if (requeue->parsed()) return RequeueJobs(*args, *queue);
      return Log(*args, *queue);
    });
  };
}

}  // namespace footprint::cli
