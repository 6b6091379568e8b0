#include "serve/queue_api.h"

#include <cstdio>
#include <random>
#include <sstream>

#include "util/file.h"
#include "util/json_bounded.h"
#include "util/json_text.h"
#include "util/strings.h"
#include "util/word_table.h"

// FP_ASSIGN_OR_RETURN for a handler: an error becomes its JSON response.
#define FP_ASSIGN_OR_RETURN_RESPONSE(lhs, rexpr) \
  FP_ASSIGN_OR_RESPOND_IMPL(FP_STATUS_CONCAT(respond_, __LINE__), lhs, rexpr)
#define FP_ASSIGN_OR_RESPOND_IMPL(result, lhs, rexpr)                               \
  auto result = (rexpr);                                                            \
  if (!result.ok())                                                                 \
    return ErrorResponse(HttpStatusOf(result.status()), result.status().message()); \
  lhs = std::move(*result)

namespace footprint::serve {
namespace {

constexpr std::string_view kPrefix = "/api/queue";
// How long an event stream of a job's output follows it at most.
constexpr int64_t kMaxStreamNs = int64_t{6} * 3600 * 1'000'000'000;
constexpr int64_t kStreamKeepAliveNs = 2'000'000'000;
constexpr int64_t kStreamPollNs = 100'000'000;  // a quiet stream looks at the queue this often

// A role and its word, in the tokens file and in answers.
struct RoleWord {
  Role role;
  std::string_view word;
};
constexpr RoleWord kRoleWords[] = {
    {Role::kRead, "read"}, {Role::kRun, "run"}, {Role::kAdmin, "admin"}};

ApiResponse JsonResponse(const nlohmann::json& body, int status = 200) {
  ApiResponse r;
  r.status = status;
  r.body = JsonText(body);
  return r;
}

ApiResponse Refused(const Caller& caller, std::string_view needed) {
  return ErrorResponse(403, caller.name + " has the role " + std::string(RoleName(caller.role)) +
                                "; this needs " + std::string(needed) +
                                " (a token of that role from whoever runs footprint serve)");
}

ApiResponse StatusResponse(const Status& status) {
  return ErrorResponse(HttpStatusOf(status), status.message());
}

// An event of the text/event-stream format: each line of `data` on a data: line of its own.
std::string Event(std::string_view name, int64_t id, const nlohmann::json& data) {
  std::string event = "event: " + std::string(name) + "\n";
  if (id > 0) event += "id: " + std::to_string(id) + "\n";
  return event + "data: " + JsonText(data) + "\n\n";
}

Result<std::vector<int64_t>> IdsOf(const nlohmann::json& body) {
  if (!body.contains("ids") || !body["ids"].is_array() || body["ids"].empty() ||
      body["ids"].size() > 1000) {
    return InvalidArgument("send {\"ids\": [ID, ...]}, 1 to 1000 job ids");
  }
  std::vector<int64_t> ids;
  for (const auto& id : body["ids"]) {
    if (!id.is_number_integer()) return InvalidArgument("job ids are integers");
    ids.push_back(id.get<int64_t>());
  }
  return ids;
}

Result<JobRequest> RequestOf(const nlohmann::json& body) {
  JobRequest request;
  auto text = [&](const char* key) -> std::string {
    return body.contains(key) && body[key].is_string() ? body[key].get<std::string>() : "";
  };
  request.kind = text("kind");
  request.file = text("file");
  request.target = text("target");
  if (body.contains("priority")) {
    if (!body["priority"].is_number_integer()) return InvalidArgument("priority is an integer");
    request.priority = static_cast<int>(std::clamp<int64_t>(body["priority"], -1001, 1001));
  }
  if (body.contains("overrides")) {
    if (!body["overrides"].is_object()) {
      return InvalidArgument("overrides is an object of KEY: \"VALUE\"");
    }
    for (const auto& [key, value] : body["overrides"].items()) {
      if (!value.is_string()) return InvalidArgument("override " + key + " must be a string");
      if (!value.get<std::string>().empty()) request.overrides[key] = value.get<std::string>();
    }
  }
  return request;
}

}  // namespace

std::string NewToken() {
  std::random_device random;  // the kernel's generator (getrandom) on Linux
  std::string token;
  char buf[9];
  for (int i = 0; i < 4; ++i) {
    std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(random()));
    token += buf;
  }
  return token;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

std::string_view RoleName(Role role) {
  const RoleWord* w = FindRow(kRoleWords, &RoleWord::role, role);
  return w ? w->word : "read";
}

Result<std::vector<TokenGrant>> ReadTokenGrants(const std::string& path) {
  FP_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, 1 << 20, "the tokens file"));
  std::vector<TokenGrant> grants;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string role, name, token, extra;
    if (!(words >> role)) continue;
    const RoleWord* granted = FindRow(kRoleWords, &RoleWord::word, role);
    const bool three_words = (words >> name >> token) && !(words >> extra);
    const bool printable = std::all_of(token.begin(), token.end(), [](char c) {
      return c > ' ' && c != 0x7f && c != ';' && c != ',';
    });
    if (!three_words || granted == nullptr || token.size() < 16 || !printable) {
      return InvalidArgument(path + ": line " + std::to_string(number) +
                             ": write ROLE NAME TOKEN (ROLE read, run or admin; TOKEN at least "
                             "16 printable characters, no ';' or ',')");
    }
    grants.push_back({.token = token, .caller = {.name = name, .role = granted->role}});
  }
  if (grants.empty()) return InvalidArgument(path + " grants no token");
  return grants;
}

std::string QueueApi::IssueFormToken(const Caller& caller) {
  std::lock_guard lock(mu_);
  const int64_t now = env_.MonotonicNs();
  std::erase_if(form_tokens_,
                [&](const auto& entry) { return now - entry.second.second > kFormTokenLifeNs; });
  while (form_tokens_.size() >= kMaxFormTokens) form_tokens_.erase(form_tokens_.begin());
  std::string token = NewToken();
  form_tokens_[token] = {caller.name, now};
  return token;
}

bool QueueApi::UseFormToken(const std::string& token, const Caller& caller) {
  std::lock_guard lock(mu_);
  auto it = form_tokens_.find(token);
  if (it == form_tokens_.end()) return false;
  const bool valid =
      it->second.first == caller.name && env_.MonotonicNs() - it->second.second <= kFormTokenLifeNs;
  form_tokens_.erase(it);
  return valid;
}

ApiResponse QueueApi::Handle(const QueueRequest& request) {
  if (request.method == "POST") return Post(request);
  if (request.method == "GET") return Get(request);
  return ErrorResponse(405, "the queue answers GET and POST");
}

ApiResponse QueueApi::Get(const QueueRequest& request) {
  const std::string_view rest = std::string_view(request.path).substr(kPrefix.size());
  if (rest.empty() || rest == "/") {
    FP_ASSIGN_OR_RETURN_RESPONSE(std::vector<Job> jobs, queue_.List());
    nlohmann::json out = {
        {"you", {{"name", request.caller.name}, {"role", RoleName(request.caller.role)}}},
        {"jobs", nlohmann::json::array()}};
    for (const Job& job : jobs) out["jobs"].push_back(JobJson(job));
    return JsonResponse(out);
  }
  if (rest == "/form") {
    nlohmann::json out = catalog_.Offered();
    out["form_token"] = IssueFormToken(request.caller);
    return JsonResponse(out);
  }
  if (rest == "/audit") {
    if (request.caller.role != Role::kAdmin) return Refused(request.caller, "admin");
    FP_ASSIGN_OR_RETURN_RESPONSE(std::vector<AuditEntry> rows, queue_.AuditLog());
    nlohmann::json out = nlohmann::json::array();
    for (const AuditEntry& a : rows) {
      out.push_back({{"id", a.id},
                     {"at_ns", a.at_ns},
                     {"who", a.who},
                     {"action", a.action},
                     {"job", OrNull(a.job_id)},
                     {"detail", a.detail}});
    }
    return JsonResponse({{"audit", out}});
  }
  const size_t slash = rest.find('/', 1);
  const std::optional<int64_t> id = ParseInt(
      rest.substr(1, slash == std::string_view::npos ? std::string_view::npos : slash - 1));
  if (!id) return ErrorResponse(404, "nothing at " + request.path.substr(0, 200));
  return JobAnswer(*id, slash == std::string_view::npos ? "" : rest.substr(slash), request.params);
}

ApiResponse QueueApi::JobAnswer(int64_t id, std::string_view rest,
                                const std::multimap<std::string, std::string>& params) {
  FP_ASSIGN_OR_RETURN_RESPONSE(Job job, queue_.Get(id));
  if (rest.empty()) return JsonResponse(JobJson(job));
  int64_t after = 0;
  if (auto it = params.find("after"); it != params.end()) {
    std::optional<int64_t> parsed = ParseInt(it->second);
    if (!parsed || *parsed < 0)
      return ErrorResponse(400, "after= is a sequence number (0 or more)");
    after = *parsed;
  }
  if (rest == "/log") {
    FP_ASSIGN_OR_RETURN_RESPONSE(std::vector<JobLogChunk> chunks, queue_.LogAfter(id, after));
    nlohmann::json out = {{"job", JobJson(job)}, {"chunks", nlohmann::json::array()}};
    for (const JobLogChunk& c : chunks) {
      out["chunks"].push_back(
          {{"seq", c.seq}, {"t_ns", c.t_ns}, {"stream", c.stream}, {"text", c.text}});
    }
    return JsonResponse(out);
  }
  if (rest != "/events") return ErrorResponse(404, "a job has /log and /events");
  ApiResponse r;
  r.content_type = "text/event-stream";
  r.stream = [this, id, after](std::ostream& out) mutable {
    const int64_t give_up = env_.MonotonicNs() + kMaxStreamNs;
    int64_t quiet_since = env_.MonotonicNs();
    while (env_.MonotonicNs() < give_up && !stopping_) {
      auto now = queue_.Get(id);  // before the output: what it said last is then read too
      auto chunks = queue_.LogAfter(id, after);
      if (!now.ok() || !chunks.ok()) return false;
      for (const JobLogChunk& c : *chunks) {
        out << Event(c.stream, c.seq, {{"text", c.text}, {"t_ns", c.t_ns}});
        after = c.seq;
      }
      const bool ended = now->state != JobState::kQueued && now->state != JobState::kRunning;
      if (ended && chunks->empty()) {
        out << Event("end", 0, JobJson(*now));
        return static_cast<bool>(out.flush());
      }
      // A comment line now and then: a client that went away is noticed by the write.
      if (!chunks->empty()) quiet_since = env_.MonotonicNs();
      if (env_.MonotonicNs() - quiet_since > kStreamKeepAliveNs) {
        out << ": waiting for output\n\n";
        quiet_since = env_.MonotonicNs();
      }
      if (!out.flush()) return false;
      if (chunks->empty()) env_.SleepUntil(env_.MonotonicNs() + kStreamPollNs);
    }
    return true;
  };
  return r;
}

ApiResponse QueueApi::Post(const QueueRequest& request) {
  if (request.caller.role < Role::kRun) return Refused(request.caller, "the role run");
  if (request.body.size() > kMaxQueueBodyBytes) {
    return ErrorResponse(413, "a queue request is at most " +
                                  std::to_string(kMaxQueueBodyBytes / 1024) + " KiB of JSON");
  }
  if (!request.content_type.starts_with("application/json")) {
    return ErrorResponse(415, "send the request as Content-Type: application/json");
  }
  if (!UseFormToken(request.form_token, request.caller)) {
    return ErrorResponse(403,
                         "the form token (X-CSRF-Token) is missing, used, expired or another "
                         "caller's; ask GET /api/queue/form for one");
  }
  auto body = ParseBoundedJson(request.body);
  if (!body.ok() || !body->is_object()) {
    return ErrorResponse(400, "the body must be a JSON object");
  }
  const std::string_view rest = std::string_view(request.path).substr(kPrefix.size());
  if (rest.empty() || rest == "/") return Launch(request, *body);
  if (rest == "/cancel" || rest == "/requeue") return Change(request, *body, rest == "/cancel");
  return ErrorResponse(404, "POST goes to /api/queue, /api/queue/cancel or /api/queue/requeue");
}

ApiResponse QueueApi::Launch(const QueueRequest& request, const nlohmann::json& body) {
  FP_ASSIGN_OR_RETURN_RESPONSE(JobRequest asked, RequestOf(body));
  FP_ASSIGN_OR_RETURN_RESPONSE(JobRequest checked, catalog_.Check(std::move(asked)));
  FP_ASSIGN_OR_RETURN_RESPONSE(int64_t id, queue_.Add(checked, request.caller.name));
  const Status audited = queue_.Audit(
      request.caller.name, "launch", id,
      checked.kind + " " + checked.file + " on " + checked.target +
          (checked.overrides.empty() ? "" : " with " + nlohmann::json(checked.overrides).dump()));
  if (!audited.ok()) return StatusResponse(audited);
  wake_();
  FP_ASSIGN_OR_RETURN_RESPONSE(Job job, queue_.Get(id));
  return JsonResponse(JobJson(job), 201);
}

ApiResponse QueueApi::Change(const QueueRequest& request, const nlohmann::json& body, bool cancel) {
  FP_ASSIGN_OR_RETURN_RESPONSE(std::vector<int64_t> ids, IdsOf(body));
  if (request.caller.role != Role::kAdmin) {
    for (int64_t id : ids) {
      FP_ASSIGN_OR_RETURN_RESPONSE(Job job, queue_.Get(id));
      if (job.owner != request.caller.name) {
        return Refused(request.caller,
                       "admin to change job " + std::to_string(id) + ", " + job.owner + "'s,");
      }
    }
  }
  std::vector<int64_t> changed = ids;
  if (cancel) {
    const Status done = queue_.Cancel(ids, request.caller.name, true);
    if (!done.ok()) return StatusResponse(done);
  } else {
    FP_ASSIGN_OR_RETURN_RESPONSE(changed, queue_.Requeue(ids, request.caller.name, true));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    const Status audited =
        queue_.Audit(request.caller.name, cancel ? "cancel" : "requeue", changed[i],
                     cancel ? "" : "of job " + std::to_string(ids[i]));
    if (!audited.ok()) return StatusResponse(audited);
  }
  wake_();
  return JsonResponse({{cancel ? "cancelled" : "queued", changed}});
}

}  // namespace footprint::serve
