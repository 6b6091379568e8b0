// The queue's part of `footprint serve`'s API (docs/evaluation.md, "The queue API"), over the
// same library as `footprint queue` (job_queue.h, job_spec.h), independent of HTTP: the server
// (server.h) maps requests onto it and names the caller; tests call it directly.
//
// Roles: `read` sees the queue and the jobs' output, `run` also launches jobs and cancels or
// requeues its own, `admin` those of others too and reads the audit rows. A request without the
// role gets 403 and changes nothing. Every change (POST) also needs a form token: one that
// GET /api/queue/form issued to the same caller, used once, within an hour (CSRF), and a body
// of at most kMaxQueueBodyBytes of JSON. Each launch, cancel and requeue leaves an audit row.
//
// The form tokens' life and the event streams' waits are on the Env's monotonic clock.
//
// Thread-safety: Handle may be called from many threads at once.
#ifndef FOOTPRINT_SERVE_QUEUE_API_H_
#define FOOTPRINT_SERVE_QUEUE_API_H_

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "footprint/env.h"
#include "serve/api.h"
#include "serve/job_queue.h"
#include "serve/job_spec.h"

namespace footprint::serve {

inline constexpr size_t kMaxQueueBodyBytes = 64 * 1024;
inline constexpr size_t kMaxFormTokens = 10'000;
inline constexpr int64_t kFormTokenLifeNs = int64_t{3600} * 1'000'000'000;

// 32 hexadecimal digits from the kernel's random generator.
std::string NewToken();
// Equal strings, in time that depends only on their lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

enum class Role { kRead = 1, kRun = 2, kAdmin = 3 };
std::string_view RoleName(Role role);

// Who sends a request: the name of their token and its role.
struct Caller {
  std::string name;
  Role role = Role::kRead;
};

// A line of a --tokens file: "ROLE NAME TOKEN" (ROLE read, run or admin; '#' starts a comment).
struct TokenGrant {
  std::string token;
  Caller caller;
};
// The grants of a tokens file; InvalidArgument naming the line that is wrong.
Result<std::vector<TokenGrant>> ReadTokenGrants(const std::string& path);

struct QueueRequest {
  std::string method;  // GET or POST
  std::string path;    // under /api/queue
  std::multimap<std::string, std::string> params;
  std::string body;          // POST: JSON
  std::string content_type;  // POST: must be application/json
  std::string form_token;    // the X-CSRF-Token header
  Caller caller;
};

class QueueApi {
 public:
  // `wake` tells the runner that the queue changed.
  QueueApi(JobQueue& queue, const JobCatalog& catalog, std::function<void()> wake,
           Env& env = Env::Default())
      : queue_(queue), catalog_(catalog), wake_(std::move(wake)), env_(env) {}

  ApiResponse Handle(const QueueRequest& request);
  // Ends the event streams (the server stops).
  void Stop() { stopping_ = true; }

 private:
  ApiResponse Get(const QueueRequest& request);
  ApiResponse Post(const QueueRequest& request);
  ApiResponse Launch(const QueueRequest& request, const nlohmann::json& body);
  ApiResponse Change(const QueueRequest& request, const nlohmann::json& body, bool cancel);
  ApiResponse JobAnswer(int64_t id, std::string_view rest,
                        const std::multimap<std::string, std::string>& params);
  std::string IssueFormToken(const Caller& caller);
  bool UseFormToken(const std::string& token, const Caller& caller);

  JobQueue& queue_;
  const JobCatalog& catalog_;
  std::function<void()> wake_;
  Env& env_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::map<std::string, std::pair<std::string, int64_t>> form_tokens_;  // -> caller, issued at
};

}  // namespace footprint::serve

#endif  // FOOTPRINT_SERVE_QUEUE_API_H_
