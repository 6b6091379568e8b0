#include "slurm/jobs.h"

#include <cmath>

#include "util/strings.h"
#include "util/subprocess.h"

namespace footprint::experiment {
namespace {

constexpr std::string_view kCommentPrefix = "footprint experiment ";

std::optional<double> NonNegative(std::string_view text) {
  auto v = ParseDouble(text);
  if (!v || !std::isfinite(*v) || *v < 0) return std::nullopt;
  return v;
}

// "JOB.STEP" with a numbered step: the step, else nullopt (batch, extern, a bare job).
std::optional<std::pair<int64_t, int64_t>> NumberedStep(std::string_view id) {
  size_t dot = id.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto job = ParseInt(id.substr(0, dot)), step = ParseInt(id.substr(dot + 1));
  if (!job || !step || *job <= 0 || *step < 0) return std::nullopt;
  return std::make_pair(*job, *step);
}

// The value of `name` in a TRES list ("cpu=00:00:01,mem=7872K,..."), or "".
std::string_view TresValue(std::string_view tres, std::string_view name) {
  for (std::string_view item : Split(tres, ',')) {
    size_t eq = item.find('=');
    if (eq != std::string_view::npos && item.substr(0, eq) == name) return item.substr(eq + 1);
  }
  return {};
}

}  // namespace

std::optional<double> ParseSlurmSeconds(std::string_view text) {
  text = Trim(text);
  double days = 0;
  if (size_t dash = text.find('-'); dash != std::string_view::npos) {
    auto d = ParseInt(text.substr(0, dash));
    if (!d || *d < 0) return std::nullopt;
    days = static_cast<double>(*d);
    text = text.substr(dash + 1);
  }
  std::vector<std::string_view> parts = Split(text, ':');
  if (parts.empty() || parts.size() > 3) return std::nullopt;
  double seconds = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    auto v = last ? NonNegative(parts[i]) : std::optional<double>(ParseInt(parts[i]));
    if (!v || *v < 0) return std::nullopt;
    seconds = seconds * 60 + *v;
  }
  return days * 86400 + seconds;
}

std::optional<double> ParseSlurmBytes(std::string_view text) {
  text = Trim(text);
  if (text.empty()) return std::nullopt;
  static constexpr std::string_view kSuffixes = "KMGTP";
  double scale = 1;
  if (size_t at = kSuffixes.find(text.back()); at != std::string_view::npos) {
    scale = std::pow(1024.0, static_cast<double>(at + 1));
    text.remove_suffix(1);
  }
  auto v = NonNegative(text);
  if (!v) return std::nullopt;
  return *v * scale;
}

std::vector<QueuedJob> ParseSqueue(std::string_view text) {
  std::vector<QueuedJob> jobs;
  for (std::string_view line : Split(text, '\n')) {
    size_t first = line.find('|');
    size_t second = first == std::string_view::npos ? first : line.find('|', first + 1);
    if (second == std::string_view::npos) continue;
    auto id = ParseInt(Trim(line.substr(0, first)));
    if (!id || *id <= 0) continue;
    jobs.push_back({*id, std::string(line.substr(first + 1, second - first - 1)),
                    std::string(line.substr(second + 1))});
  }
  return jobs;
}

std::vector<StepUsage> ParseSstat(std::string_view text) {
  std::vector<StepUsage> steps;
  for (std::string_view line : Split(text, '\n')) {
    std::vector<std::string_view> fields = Split(Trim(line), '|');
    if (fields.size() < 3) continue;
    auto step = NumberedStep(fields[0]);
    auto cpu = ParseSlurmSeconds(TresValue(fields[1], "cpu"));
    auto rss = ParseSlurmBytes(fields[2]);
    if (step && cpu && rss) steps.push_back({step->first, step->second, *cpu, *rss});
  }
  return steps;
}

JobAccount ParseSacct(std::string_view text, int64_t job_id) {
  JobAccount account;
  for (std::string_view line : Split(text, '\n')) {
    std::vector<std::string_view> fields = Split(Trim(line), '|');
    if (fields.size() < 5) continue;
    const bool ended = !fields[2].empty() && fields[2] != "Unknown";
    if (ParseInt(fields[0]) == job_id) {
      account.state = std::string(fields[1]);
      account.ended = ended;
      continue;
    }
    auto step = NumberedStep(fields[0]);
    auto cpu = ParseSlurmSeconds(fields[3]);
    auto rss = ParseSlurmBytes(fields[4]);
    if (ended && step && step->first == job_id && cpu && rss) {
      account.steps.push_back({step->first, step->second, *cpu, *rss});
    }
  }
  return account;
}

std::string JobComment(const std::string& plan_path, size_t workload_index) {
  return std::string(kCommentPrefix) + plan_path + " workload " + std::to_string(workload_index);
}

std::optional<size_t> WorkloadOfComment(std::string_view comment, const std::string& plan_path) {
  const std::string head = std::string(kCommentPrefix) + plan_path + " workload ";
  if (!comment.starts_with(head)) return std::nullopt;
  auto index = ParseInt(comment.substr(head.size()));
  if (!index || *index < 0) return std::nullopt;
  return static_cast<size_t>(*index);
}

Result<int64_t> Submit(const std::vector<std::string>& args, const std::string& script,
                       const std::string& log, const std::map<std::string, std::string>& variables,
                       Env& env) {
  std::vector<std::string> argv = {"sbatch", "--parsable"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(script);
  Result<std::string> before = env.ReadFile(log);  // sbatch's answer is what follows
  const int status = RunAndWait(argv, variables, {}, log);
  if (status == 127) return IoError("sbatch was not found: install Slurm's client commands");
  Result<std::string> log_text = env.ReadFile(log);
  if (!log_text.ok()) {
    return IoError("sbatch exited " + std::to_string(status) + " but its answer cannot be read (" +
                   log_text.status().message() + "): squeue --me says whether the job was queued");
  }
  std::string_view said = *log_text;
  if (before.ok() && before->size() <= said.size()) said.remove_prefix(before->size());
  std::string last_line;
  for (std::string_view line : Split(said, '\n')) {
    line = Trim(line);
    if (line.empty()) continue;
    auto id = ParseInt(line.substr(0, line.find(';')));  // "JOB" or "JOB;CLUSTER"
    if (status == 0 && id && *id > 0) return *id;
    last_line = std::string(line);
  }
  return IoError("sbatch failed (exit " + std::to_string(status) + ")" +
                 (last_line.empty() ? "" : ": " + last_line) + "; see " + log);
}

Result<std::vector<QueuedJob>> ListQueue() {
  auto out = Capture({"squeue", "--me", "-h", "-o", "%i|%T|%k"});
  if (!out) {
    return IoError(
        "squeue failed: Slurm's controller did not answer (scontrol ping says "
        "whether it is up)");
  }
  return ParseSqueue(*out);
}

std::vector<StepUsage> StepsUsage(int64_t job_id, int64_t* sstat_rss_bytes) {
  auto out = Capture({"sstat", "--allsteps", "-n", "-P", "-j", std::to_string(job_id), "-o",
                      "JobID,TRESUsageInTot,MaxRSS"},
                     {}, {}, sstat_rss_bytes);
  return out ? ParseSstat(*out) : std::vector<StepUsage>{};
}

bool AccountingAnswers() {
  return Capture({"sacct", "-n", "-P", "-X", "-o", "JobID", "-S", "now", "-E", "now"}).has_value();
}

std::optional<JobAccount> AccountOf(int64_t job_id) {
  auto out = Capture(
      {"sacct", "-n", "-P", "-j", std::to_string(job_id), "-o", "JobID,State,End,TotalCPU,MaxRSS"});
  if (!out) return std::nullopt;
  return ParseSacct(*out, job_id);
}

}  // namespace footprint::experiment
