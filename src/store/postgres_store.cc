// The PostgreSQL implementation of Store (docs/cluster.md), through libpq loaded at run time
// (store/libpq.h). Samples are stored as chunks (store/schema.cc says why), written with COPY.
#include <endian.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "footprint/store.h"
#include "store/libpq.h"
#include "store/rows.h"
#include "store/schema.h"
#include "store/shipment.h"
#include "store/sql_reads.h"
#include "store/stores.h"
#include "util/clock.h"

namespace footprint {
namespace {

// SQLSTATE too_many_connections: the server has no connection slot left ("sorry, too many
// clients already"); a writer tries again later.
constexpr char kTooManyClients[] = "53300";

// Parameters of one statement, as text (PQexecParams' text format; null: SQL NULL).
class Params {
 public:
  Params& Text(std::string_view v) {
    values_.emplace_back(std::string(v));
    return *this;
  }
  Params& Int(int64_t v) { return Text(std::to_string(v)); }
  // As PostgreSQL reads a float8 in text.
  Params& Real(double v) {
    if (std::isnan(v)) return Text("NaN");
    if (std::isinf(v)) return Text(v > 0 ? "Infinity" : "-Infinity");
    char buf[32];
    return Text(std::string_view(buf, std::to_chars(buf, buf + sizeof buf, v).ptr));
  }
  Params& Null() {
    values_.emplace_back(std::nullopt);
    return *this;
  }
  template <typename T>
  Params& Opt(const std::optional<T>& v) {
    return v ? Int(static_cast<int64_t>(*v)) : Null();
  }
  std::vector<const char*> Pointers() const {
    std::vector<const char*> out;
    for (const auto& v : values_) out.push_back(v ? v->c_str() : nullptr);
    return out;
  }

 private:
  std::vector<std::optional<std::string>> values_;
};

// The binder BindRun takes: the run's columns are bound in order.
struct ParamsBinder {
  Params& p;
  void Text(int, std::string_view v) { p.Text(v); }
  void Int(int, int64_t v) { p.Int(v); }
  void Null(int) { p.Null(); }
};

// A query's result, cleared when it goes.
class PgResult {
 public:
  PgResult(const pq::Library* lib, pq::Result* res) : lib_(lib), res_(res) {}
  PgResult(PgResult&& o) noexcept : lib_(o.lib_), res_(std::exchange(o.res_, nullptr)) {}
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
  ~PgResult() {
    if (res_ != nullptr) lib_->clear(res_);
  }
  pq::Result* get() const { return res_; }
  int Rows() const { return lib_->ntuples(res_); }
  // Row `row` for ReadRun and the row callbacks.
  struct Row {
    const PgResult& r;
    int row;
    bool IsNull(int c) const { return r.lib_->get_is_null(r.res_, row, c) != 0; }
    std::string Text(int c) const {
      return std::string(r.lib_->get_value(r.res_, row, c),
                         static_cast<size_t>(r.lib_->get_length(r.res_, row, c)));
    }
    int64_t Int(int c) const {
      return std::strtoll(r.lib_->get_value(r.res_, row, c), nullptr, 10);
    }
    double Real(int c) const { return std::strtod(r.lib_->get_value(r.res_, row, c), nullptr); }
    std::optional<int64_t> OptInt(int c) const {
      if (IsNull(c)) return std::nullopt;
      return Int(c);
    }
    std::string_view Bytes(int c) const {
      return {r.lib_->get_value(r.res_, row, c),
              static_cast<size_t>(r.lib_->get_length(r.res_, row, c))};
    }
  };
  Row operator[](int row) const { return {*this, row}; }

 private:
  const pq::Library* lib_;
  pq::Result* res_;
};

// An int8 column in binary format; nullopt when it is not 8 bytes.
std::optional<int64_t> BinaryInt8(std::string_view bytes) {
  if (bytes.size() != 8) return std::nullopt;
  uint64_t raw;
  std::memcpy(&raw, bytes.data(), 8);
  return static_cast<int64_t>(be64toh(raw));
}

// The 8-byte big-endian numbers packed in a bytea column (times as int64, values as IEEE-754
// doubles); false when its length is not a multiple of 8 (a damaged chunk is refused).
template <typename T>
bool DecodePacked(std::string_view bytes, std::vector<T>& out) {
  static_assert(sizeof(T) == 8);
  if (bytes.size() % 8 != 0) return false;
  out.reserve(out.size() + bytes.size() / 8);
  for (size_t at = 0; at < bytes.size(); at += 8) {
    out.push_back(std::bit_cast<T>(*BinaryInt8(bytes.substr(at, 8))));
  }
  return true;
}

// `v` as 16 hex digits, big-endian, for a bytea in COPY's text format.
void AppendHex64(std::string& out, uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int shift = 60; shift >= 0; shift -= 4) out += kDigits[(v >> shift) & 0xf];
}

struct Sample {
  int64_t t;
  double value;
  int64_t seq;  // of the chunk: the order of the writes
};

// Sorts `samples` by time and keeps the value written last for each time, when they are not
// already strictly in time order (chunks that overlap: a replayed write).
void KeepOnePerTime(std::vector<Sample>& samples) {
  if (std::adjacent_find(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) {
        return a.t >= b.t;
      }) == samples.end()) {
    return;
  }
  std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) {
    return a.t != b.t ? a.t < b.t : a.seq < b.seq;
  });
  size_t kept = 0;
  for (const Sample& s : samples) {
    if (kept > 0 && samples[kept - 1].t == s.t) {
      samples[kept - 1] = s;
    } else {
      samples[kept++] = s;
    }
  }
  samples.resize(kept);
}

class PostgresStore final : public SqlReads<PostgresStore>, public ShipmentLog {
 public:
  static constexpr SqlDialect kDialect = SqlDialect::kPostgres;

  PostgresStore(const pq::Library* lib, std::string uri, bool read_only, Env& env)
      : SqlReads(env),
        lib_(lib),
        uri_(std::move(uri)),
        location_(RedactedLocation(uri_)),
        read_only_(read_only) {}
  ~PostgresStore() override { Disconnect(); }

  // Opens the connection when none is open (the first statement after Disconnect does too),
  // and checks the schema (creating it when none) on the first.
  Status Connect();

  Status CreateRun(const RunRecord& run) override;
  Result<int64_t> EnsureSeries(const SeriesRecord& series) override;
  Status Append(const std::string& run_id, std::span<const SamplePoint> samples,
                int64_t heartbeat_ns) override;
  Status FinishRun(const RunRecord& run, const std::map<std::string, double>& totals) override;
  Status MarkInterrupted(const std::string& run_id, int64_t ended_at_ns) override;
  Status InTransaction(const std::function<Status()>& body) override;
  Result<int64_t> InsertScope(const ScopeRecord& scope) override;
  Status EndScope(int64_t scope_id, int64_t end_ns) override;
  Status InsertValue(const ValueRecord& value) override;
  Status PutArtifact(const ArtifactRecord& artifact) override;
  Result<std::vector<double>> LoadValues(int64_t series_id, std::vector<int64_t>* times) override;
  Status ScanSamplesAfter(int64_t series_id, int64_t after_ns, size_t limit,
                          const std::function<void(int64_t, double)>& visit) override;
  Result<std::optional<int64_t>> SeriesEnd(int64_t series_id) override;
  Result<std::optional<int64_t>> LastSampleTime(const std::string& run_id) override;
  Result<std::vector<PendingBuffer>> PendingBuffers(const std::string& run_id) override;
  Result<int64_t> LockWriter(const JournalInfo& info, const std::string& path) override;
  Status LoadIds(const std::string& writer, std::unordered_map<int64_t, int64_t>& ids) override;
  Status Record(const std::string& writer, const Shipment& shipment) override;
  void Disconnect() override {
    if (conn_ != nullptr) lib_->finish(std::exchange(conn_, nullptr));
  }
  bool refused_for_lack_of_slots() const override { return last_sqlstate_ == kTooManyClients; }
  const std::string& location() const override { return location_; }
  const std::string& open_location() const override { return uri_; }
  bool read_only() const override { return read_only_; }
  // The server keeps the data wherever this process is: nothing to check or rescue.
  Status CheckLocation() override { return Status::Ok(); }
  Status SaveCopyTo(const std::string& path) override {
    return DatabaseError("cannot save a copy of " + location_ + " to " + path +
                         ": use pg_dump for PostgreSQL databases");
  }

 private:
  // Runs one statement (binary results when `binary`); kDatabase saying what failed. Outside a
  // transaction, a connection the server dropped (a restart) is opened again first.
  Result<PgResult> Run(std::string_view sql, const Params& params, std::string_view doing,
                       bool binary = false);
  // `res` when it holds a success (or the status `expected`), else kDatabase saying what
  // failed.
  Result<PgResult> Checked(PgResult res, std::string_view doing, int expected = -1);
  Status Exec(std::string_view sql, std::string_view doing) {
    return Run(sql, Params(), doing).status();
  }
  // Several statements in one text (the simple query protocol).
  Status ExecScript(std::string_view sql, std::string_view doing) {
    return Checked(PgResult(lib_, lib_->exec(conn_, std::string(sql).c_str())), doing).status();
  }
  Status Reconnect();
  Status ConfigureSession();
  Status Migrate();
  Status CopySamples(std::span<const SamplePoint> samples);
  // The samples of a series after `after_ns` from its first `max_chunks` chunks (0: all),
  // in time order; `all` tells whether no chunk was left out, `last_first` the t_first of the
  // last chunk read.
  Status ReadSamples(int64_t series_id, int64_t after_ns, int64_t max_chunks,
                     std::vector<Sample>& out, bool& all, int64_t& last_first);
  // Runs a query, calling `row` for each row of its result.
  template <typename RowFn>
  Status Query(std::string_view sql, const Params& params, RowFn row) {
    FP_ASSIGN_OR_RETURN(PgResult res, Run(sql, params, "cannot read"));
    for (int i = 0; i < res.Rows(); ++i) row(res[i]);
    return Status::Ok();
  }
  // SqlReads's way in.
  friend class SqlReads<PostgresStore>;
  template <typename RowFn>
  Status QueryRows(std::string_view sql, const std::vector<SqlParam>& params, RowFn row) {
    Params bound;
    for (const SqlParam& p : params) {
      const int64_t* number = std::get_if<int64_t>(&p);
      number ? bound.Int(*number) : bound.Text(std::get<std::string>(p));
    }
    return Query(sql, bound, std::move(row));
  }

  const pq::Library* lib_;
  pq::Conn* conn_ = nullptr;  // none until the first statement, and after Disconnect
  std::string uri_;           // as given: may hold a password
  std::string location_;      // for messages
  bool read_only_;
  bool schema_checked_ = false;
  bool in_transaction_ = false;
  std::string last_sqlstate_;  // of the last failed statement
};

// The first line of a libpq message, without its "ERROR:  " prefix.
std::string OneLine(const char* message) {
  std::string s = message != nullptr ? message : "";
  if (s.starts_with("ERROR:  ")) s.erase(0, 8);
  s = s.substr(0, s.find('\n'));
  return s.empty() ? "unknown error" : s;
}

Result<PgResult> PostgresStore::Run(std::string_view sql, const Params& params,
                                    std::string_view doing, bool binary) {
  last_sqlstate_.clear();
  const std::string text(sql);
  const std::vector<const char*> values = params.Pointers();
  auto run = [&] {
    return Checked(
        PgResult(lib_, lib_->exec_params(conn_, text.c_str(), static_cast<int>(values.size()),
                                         nullptr, values.data(), nullptr, nullptr, binary ? 1 : 0)),
        doing);
  };
  if (in_transaction_) return run();
  if (conn_ == nullptr) {
    FP_RETURN_IF_ERROR(Connect());
  } else if (lib_->status(conn_) != pq::kConnectionOk) {
    FP_RETURN_IF_ERROR(Reconnect());
  }
  Result<PgResult> res = run();
  // libpq learns that the server dropped the connection (a restart) from the statement that
  // fails: outside a transaction, that one is sent once more on a new connection.
  if (res.ok() || lib_->status(conn_) == pq::kConnectionOk || !Reconnect().ok()) return res;
  return run();
}

Result<PgResult> PostgresStore::Checked(PgResult res, std::string_view doing, int expected) {
  const int status = res.get() != nullptr ? lib_->result_status(res.get()) : -1;
  if (expected >= 0 ? status == expected : status == pq::kCommandOk || status == pq::kTuplesOk) {
    return res;
  }
  const char* state =
      res.get() != nullptr ? lib_->result_error_field(res.get(), pq::kDiagSqlstate) : nullptr;
  last_sqlstate_ = state != nullptr ? state : "";
  const char* message = res.get() != nullptr ? lib_->result_error_message(res.get()) : nullptr;
  return DatabaseError(
      std::string(doing) + " " + location_ + ": " +
      OneLine(message != nullptr && *message != '\0' ? message : lib_->error_message(conn_)));
}

Status PostgresStore::Reconnect() {
  lib_->reset(conn_);
  if (lib_->status(conn_) != pq::kConnectionOk) {
    return DatabaseError("lost the connection to " + location_ + " and cannot connect again: " +
                         WithoutSecrets(OneLine(lib_->error_message(conn_)), uri_));
  }
  return ConfigureSession();
}

Status PostgresStore::ConfigureSession() {
  // Floats in text (totals, values) with every digit, whatever the server's default.
  FP_RETURN_IF_ERROR(Exec("SET extra_float_digits = 3", "cannot configure"));
  if (read_only_) return Exec("SET default_transaction_read_only = on", "cannot configure");
  return Status::Ok();
}

Status PostgresStore::Connect() {
  if (conn_ != nullptr) return Status::Ok();
  // The URI's own connect_timeout, if any, wins: it comes after (libpq's expand_dbname).
  const char* keys[] = {"connect_timeout", "fallback_application_name", "dbname", nullptr};
  const char* values[] = {"10", "footprint", uri_.c_str(), nullptr};
  conn_ = lib_->connectdb_params(keys, values, /*expand_dbname=*/1);
  if (conn_ == nullptr) return DatabaseError("cannot connect to " + location_);
  if (lib_->status(conn_) != pq::kConnectionOk) {
    const std::string why = OneLine(lib_->error_message(conn_));
    Disconnect();
    // libpq gives no SQLSTATE for a refused connection: the server's words tell it.
    last_sqlstate_ = why.find("too many clients") != std::string::npos ||
                             why.find("connection slots are reserved") != std::string::npos
                         ? kTooManyClients
                         : "";
    return DatabaseError("cannot connect to " + location_ + ": " + WithoutSecrets(why, uri_) +
                         "; check that the server runs and that the URI's host, port, user and "
                         "database are right (a password: in the URI, ~/.pgpass or PGPASSWORD)");
  }
  lib_->set_notice_processor(
      conn_, [](void*, const char*) {}, nullptr);
  Status st = ConfigureSession();
  if (st.ok() && !schema_checked_) st = Migrate();
  schema_checked_ = st.ok();
  if (!st.ok()) Disconnect();
  return st;
}

Status PostgresStore::Migrate() {
  auto version = [&]() -> Result<int> {
    // A query of the catalog, not to_regclass: its cache may not yet know of a table another
    // process created while this one waited for the lock.
    FP_ASSIGN_OR_RETURN(PgResult exists, Run("SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables "
                                             "WHERE schemaname = current_schema() AND "
                                             "tablename = 'footprint_schema')",
                                             Params(), "cannot read"));
    if (exists[0].Text(0) != "t") return 0;
    FP_ASSIGN_OR_RETURN(PgResult v,
                        Run("SELECT max(version) FROM footprint_schema", Params(), "cannot read"));
    return static_cast<int>(v[0].OptInt(0).value_or(0));
  };
  auto check = [&](int v) -> Status {
    if (v <= kPostgresSchemaVersion) return Status::Ok();
    return DatabaseError(location_ + " was written by a newer footprint (schema v" +
                         std::to_string(v) + "; this footprint knows up to v" +
                         std::to_string(kPostgresSchemaVersion) +
                         "); upgrade footprint to read it");
  };
  FP_ASSIGN_OR_RETURN(int v, version());
  FP_RETURN_IF_ERROR(check(v));
  if (v == kPostgresSchemaVersion) return Status::Ok();
  if (read_only_) {
    return DatabaseError(v == 0 ? "no footprint database at " + location_ +
                                      "; record a run first (footprint run -o URI -- COMMAND)"
                                : location_ + " has schema v" + std::to_string(v) +
                                      " and must be upgraded; open it once with write access");
  }
  // Concurrent first runs: one creates the tables while the others wait on the lock.
  return InTransaction([&]() -> Status {
    FP_RETURN_IF_ERROR(Exec("SELECT pg_advisory_xact_lock(7368823807)", "cannot lock"));
    FP_ASSIGN_OR_RETURN(int now, version());
    FP_RETURN_IF_ERROR(check(now));
    auto migrations = PostgresMigrations();
    if (now == 0) {
      FP_RETURN_IF_ERROR(Exec("CREATE TABLE footprint_schema(version INTEGER NOT NULL)",
                              "cannot create the schema in"));
    }
    for (int i = now; i < kPostgresSchemaVersion; ++i) {
      FP_RETURN_IF_ERROR(
          ExecScript(migrations[static_cast<size_t>(i)], "cannot create the schema in"));
    }
    FP_RETURN_IF_ERROR(Exec("DELETE FROM footprint_schema", "cannot set the version of"));
    return Run("INSERT INTO footprint_schema VALUES ($1)", Params().Int(kPostgresSchemaVersion),
               "cannot set the version of")
        .status();
  });
}

Status PostgresStore::InTransaction(const std::function<Status()>& body) {
  if (read_only_) return DatabaseError(location_ + " is open read-only");
  if (in_transaction_) return body();  // a part of the transaction open (a buffer's shipment)
  FP_RETURN_IF_ERROR(Exec("BEGIN", "cannot start a transaction in"));
  in_transaction_ = true;
  struct Ended {  // also when `body` throws
    bool& in_transaction;
    ~Ended() { in_transaction = false; }
  } ended{in_transaction_};
  Status st = body();
  if (st.ok()) st = Exec("COMMIT", "cannot commit to");
  in_transaction_ = false;  // a ROLLBACK on a dropped connection may open a new one
  if (!st.ok()) (void)Exec("ROLLBACK", "cannot roll back");
  return st;
}

Status PostgresStore::CreateRun(const RunRecord& r) {
  Params p;
  ParamsBinder binder{p};
  BindRun(binder, r);
  Status st = Run("INSERT INTO runs(" + std::string(kRunColumns) +
                      ") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17)",
                  p, "cannot write to")
                  .status();
  if (!st.ok() && last_sqlstate_ == "23505") return InvalidArgument("run " + r.id + " exists");
  return st;
}

Result<int64_t> PostgresStore::EnsureSeries(const SeriesRecord& r) {
  FP_ASSIGN_OR_RETURN(
      PgResult res,
      Run("INSERT INTO series(run_id, metric, unit, entity, scope_id) VALUES ($1,$2,$3,$4,$5) "
          "ON CONFLICT (run_id, metric, entity, coalesce(scope_id, -1)) "
          "DO UPDATE SET unit = excluded.unit RETURNING id",
          Params().Text(r.run_id).Text(r.metric).Text(r.unit).Text(r.entity).Opt(r.scope_id),
          "cannot write to"));
  return res[0].Int(0);
}

Status PostgresStore::CopySamples(std::span<const SamplePoint> samples) {
  // One chunk per series: its samples in time order, the last value of a repeated time.
  std::vector<SamplePoint> sorted(samples.begin(), samples.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const SamplePoint& a, const SamplePoint& b) {
    return a.series_id != b.series_id ? a.series_id < b.series_id : a.t_ns < b.t_ns;
  });
  size_t kept = 0;
  for (const SamplePoint& p : sorted) {
    const bool repeated =
        kept > 0 && sorted[kept - 1].series_id == p.series_id && sorted[kept - 1].t_ns == p.t_ns;
    sorted[repeated ? kept - 1 : kept++] = p;
  }
  sorted.resize(kept);
  std::string rows;
  for (size_t i = 0; i < sorted.size();) {
    size_t end = i;
    std::string times = "\\\\x", values = "\\\\x";  // bytea's hex form, '\\' escaped for COPY
    for (; end < sorted.size() && sorted[end].series_id == sorted[i].series_id; ++end) {
      AppendHex64(times, static_cast<uint64_t>(sorted[end].t_ns));
      AppendHex64(values, std::bit_cast<uint64_t>(sorted[end].value));
    }
    rows += std::to_string(sorted[i].series_id) + '\t' + std::to_string(sorted[i].t_ns) + '\t' +
            std::to_string(sorted[end - 1].t_ns) + '\t' + std::to_string(end - i) + '\t' + times +
            '\t' + values + '\n';
    i = end;
  }
  FP_RETURN_IF_ERROR(Checked(PgResult(lib_, lib_->exec(conn_,
                                                       "COPY sample_chunks(series_id, t_first, "
                                                       "t_last, n, t_ns, value) FROM STDIN")),
                             "cannot write samples to", pq::kCopyIn)
                         .status());
  // The copy is always ended (aborted when the data could not be sent), or the connection
  // would stay in COPY mode.
  const bool sent = lib_->put_copy_data(conn_, rows.data(), static_cast<int>(rows.size())) == 1;
  const bool ended =
      lib_->put_copy_end(conn_, sent ? nullptr : "footprint could not send the samples") == 1;
  Result<PgResult> copied =
      Checked(PgResult(lib_, lib_->get_result(conn_)), "cannot write samples to");
  while (pq::Result* rest = lib_->get_result(conn_)) {
    const int status = lib_->result_status(rest);
    lib_->clear(rest);
    if (status == pq::kCopyIn) break;  // libpq's answer while a copy is still open
  }
  if (!sent || !ended) {
    return DatabaseError("cannot write samples to " + location_ + ": " +
                         OneLine(lib_->error_message(conn_)));
  }
  return copied.status();
}

Status PostgresStore::Append(const std::string& run_id, std::span<const SamplePoint> samples,
                             int64_t heartbeat_ns) {
  return InTransaction([&]() -> Status {
    if (!samples.empty()) FP_RETURN_IF_ERROR(CopySamples(samples));
    return Run("UPDATE runs SET heartbeat_ns = $1 WHERE id = $2",
               Params().Int(heartbeat_ns).Text(run_id), "cannot write to")
        .status();
  });
}

Status PostgresStore::FinishRun(const RunRecord& run, const std::map<std::string, double>& totals) {
  return InTransaction([&]() -> Status {
    FP_RETURN_IF_ERROR(Run("UPDATE runs SET status = $1, exit_code = $2, started_at_ns = $3, "
                           "ended_at_ns = $4, meta = $5, heartbeat_ns = $6 WHERE id = $7",
                           Params()
                               .Text(RunStatusName(run.status))
                               .Opt(run.exit_code)
                               .Int(run.started_at_ns)
                               .Opt(run.ended_at_ns)
                               .Text(run.meta_json)
                               .Opt(run.ended_at_ns)
                               .Text(run.id),
                           "cannot write to")
                           .status());
    for (const auto& [name, value] : totals) {
      FP_RETURN_IF_ERROR(Run("INSERT INTO run_totals(run_id, name, value) VALUES ($1,$2,$3) "
                             "ON CONFLICT (run_id, name) DO UPDATE SET value = excluded.value",
                             Params().Text(run.id).Text(name).Real(value), "cannot write totals to")
                             .status());
    }
    return Status::Ok();
  });
}

Status PostgresStore::MarkInterrupted(const std::string& run_id, int64_t ended_at_ns) {
  if (read_only_) return Status::Ok();
  return Run("UPDATE runs SET status = 'interrupted', ended_at_ns = $1 "
             "WHERE id = $2 AND status = 'running'",
             Params().Int(ended_at_ns).Text(run_id), "cannot write to")
      .status();
}

Result<int64_t> PostgresStore::InsertScope(const ScopeRecord& r) {
  FP_ASSIGN_OR_RETURN(PgResult res,
                      Run("INSERT INTO scopes(run_id, parent_id, name, thread, start_ns, end_ns) "
                          "VALUES ($1,$2,$3,$4,$5,$6) RETURNING id",
                          Params()
                              .Text(r.run_id)
                              .Opt(r.parent_id)
                              .Text(r.name)
                              .Int(r.thread)
                              .Int(r.start_ns)
                              .Opt(r.end_ns),
                          "cannot write scopes to"));
  return res[0].Int(0);
}

Status PostgresStore::EndScope(int64_t scope_id, int64_t end_ns) {
  return Run("UPDATE scopes SET end_ns = $1 WHERE id = $2", Params().Int(end_ns).Int(scope_id),
             "cannot write scopes to")
      .status();
}

Status PostgresStore::InsertValue(const ValueRecord& r) {
  Params p;
  p.Text(r.run_id).Opt(r.scope_id).Text(r.name).Opt(r.step).Int(r.t_ns);
  r.value ? p.Real(*r.value) : p.Null();
  r.data_json.empty() ? p.Null() : p.Text(r.data_json);
  return Run("INSERT INTO run_values(run_id, scope_id, name, step, t_ns, value, data) "
             "VALUES ($1,$2,$3,$4,$5,$6,$7)",
             p, "cannot write values to")
      .status();
}

Status PostgresStore::PutArtifact(const ArtifactRecord& r) {
  return Run("INSERT INTO artifacts(run_id, name, path, sha256, size) VALUES ($1,$2,$3,$4,$5) "
             "ON CONFLICT (run_id, name) DO UPDATE SET path = excluded.path, "
             "sha256 = excluded.sha256, size = excluded.size",
             Params().Text(r.run_id).Text(r.name).Text(r.path).Text(r.sha256).Int(r.size),
             "cannot write artifacts to")
      .status();
}

Status PostgresStore::ReadSamples(int64_t series_id, int64_t after_ns, int64_t max_chunks,
                                  std::vector<Sample>& out, bool& all, int64_t& last_first) {
  Params p;
  p.Int(series_id).Int(after_ns);
  max_chunks > 0 ? p.Int(max_chunks) : p.Null();  // LIMIT NULL: no limit
  FP_ASSIGN_OR_RETURN(PgResult res, Run("SELECT t_ns, value, t_first, seq FROM sample_chunks "
                                        "WHERE series_id = $1 AND t_last > $2 "
                                        "ORDER BY t_first, seq LIMIT $3",
                                        p, "cannot read", /*binary=*/true));
  std::vector<int64_t> times;
  std::vector<double> values;
  for (int i = 0; i < res.Rows(); ++i) {
    times.clear();
    values.clear();
    const std::optional<int64_t> first = BinaryInt8(res[i].Bytes(2));
    const std::optional<int64_t> seq = BinaryInt8(res[i].Bytes(3));
    if (!DecodePacked(res[i].Bytes(0), times) || !DecodePacked(res[i].Bytes(1), values) ||
        times.size() != values.size() || !first || !seq) {
      return DatabaseError("a chunk of samples of series " + std::to_string(series_id) + " in " +
                           location_ + " is not readable");
    }
    for (size_t k = 0; k < times.size(); ++k) {
      if (times[k] > after_ns) out.push_back({times[k], values[k], *seq});
    }
    last_first = *first;
  }
  all = max_chunks <= 0 || res.Rows() < max_chunks;
  KeepOnePerTime(out);
  return Status::Ok();
}

Status PostgresStore::ScanSamplesAfter(int64_t series_id, int64_t after_ns, size_t limit,
                                       const std::function<void(int64_t, double)>& visit) {
  // With a limit, chunks are read a few at a time, more each round, until the first `limit`
  // samples are known: no chunk left unread can hold a sample before the limit-th.
  for (int64_t chunks = limit > 0 ? 16 : 0;; chunks *= 4) {
    std::vector<Sample> samples;
    bool all = true;
    int64_t last_first = 0;
    FP_RETURN_IF_ERROR(ReadSamples(series_id, after_ns, chunks, samples, all, last_first));
    const bool enough = limit > 0 && samples.size() >= limit && samples[limit - 1].t <= last_first;
    if (all || enough) {
      const size_t n = limit > 0 ? std::min(limit, samples.size()) : samples.size();
      for (size_t i = 0; i < n; ++i) visit(samples[i].t, samples[i].value);
      return Status::Ok();
    }
  }
}

Result<std::vector<double>> PostgresStore::LoadValues(int64_t series_id,
                                                      std::vector<int64_t>* times) {
  std::vector<double> values;
  FP_RETURN_IF_ERROR(ScanSamples(series_id, [&](int64_t t, double v) {
    if (times) times->push_back(t);
    values.push_back(v);
  }));
  return values;
}

Result<std::optional<int64_t>> PostgresStore::SeriesEnd(int64_t series_id) {
  std::optional<int64_t> last;
  FP_RETURN_IF_ERROR(Query("SELECT max(t_last) FROM sample_chunks WHERE series_id = $1",
                           Params().Int(series_id),
                           [&](const PgResult::Row& s) { last = s.OptInt(0); }));
  return last;
}

Result<std::optional<int64_t>> PostgresStore::LastSampleTime(const std::string& run_id) {
  std::optional<int64_t> last;
  FP_RETURN_IF_ERROR(
      Query("SELECT max(t_last) FROM sample_chunks WHERE series_id IN "
            "(SELECT id FROM series WHERE run_id = $1)",
            Params().Text(run_id), [&](const PgResult::Row& s) { last = s.OptInt(0); }));
  return last;
}

Result<std::vector<PendingBuffer>> PostgresStore::PendingBuffers(const std::string& run_id) {
  std::vector<PendingBuffer> out;
  FP_RETURN_IF_ERROR(Query(
      "SELECT w.writer, w.host, w.path, w.shipped_at_ns FROM buffer_runs r JOIN buffer_writers w "
      "USING (writer) WHERE r.run_id = $1 AND NOT r.closed ORDER BY w.shipped_at_ns",
      Params().Text(run_id), [&](const PgResult::Row& s) {
        out.push_back({s.Text(0), s.Text(1), s.Text(2), s.Int(3)});
      }));
  return out;
}

Result<int64_t> PostgresStore::LockWriter(const JournalInfo& info, const std::string& path) {
  FP_RETURN_IF_ERROR(Run("INSERT INTO buffer_writers(writer, host, path, shipped_seq, "
                         "shipped_at_ns) VALUES ($1,$2,$3,0,0) ON CONFLICT (writer) DO NOTHING",
                         Params().Text(info.writer).Text(info.host).Text(path), "cannot write to")
                         .status());
  FP_ASSIGN_OR_RETURN(PgResult res,
                      Run("SELECT shipped_seq FROM buffer_writers WHERE writer = $1 FOR UPDATE",
                          Params().Text(info.writer), "cannot read"));
  return res[0].Int(0);
}

Status PostgresStore::LoadIds(const std::string& writer,
                              std::unordered_map<int64_t, int64_t>& ids) {
  return Query("SELECT local_id, remote_id FROM buffer_ids WHERE writer = $1",
               Params().Text(writer), [&](const PgResult::Row& s) { ids[s.Int(0)] = s.Int(1); });
}

Status PostgresStore::Record(const std::string& writer, const Shipment& s) {
  FP_RETURN_IF_ERROR(Run("UPDATE buffer_writers SET shipped_seq = $2, shipped_at_ns = $3 "
                         "WHERE writer = $1",
                         Params().Text(writer).Int(s.seq).Int(s.at_ns), "cannot write to")
                         .status());
  if (!s.new_ids.empty()) {
    std::string local = "{", remote = "{";  // array literals
    for (const auto& [l, r] : s.new_ids) {
      local += std::to_string(l) + ',';
      remote += std::to_string(r) + ',';
    }
    local.back() = '}';
    remote.back() = '}';
    FP_RETURN_IF_ERROR(Run("INSERT INTO buffer_ids(writer, local_id, remote_id) "
                           "SELECT $1, unnest($2::bigint[]), unnest($3::bigint[])",
                           Params().Text(writer).Text(local).Text(remote), "cannot write to")
                           .status());
  }
  for (const std::string& run : s.runs) {
    FP_RETURN_IF_ERROR(
        Run("INSERT INTO buffer_runs(writer, run_id, creator, closed) VALUES ($1,$2,$3,$4) "
            "ON CONFLICT (writer, run_id) DO UPDATE SET creator = buffer_runs.creator OR "
            "excluded.creator, closed = buffer_runs.closed OR excluded.closed",
            Params()
                .Text(writer)
                .Text(run)
                .Text(s.created.contains(run) ? "true" : "false")
                .Text(s.finished.contains(run) ? "true" : "false"),
            "cannot write to")
            .status());
  }
  if (!s.closed) return Status::Ok();
  if (s.died) {
    FP_RETURN_IF_ERROR(
        Run("UPDATE runs SET status = 'interrupted', ended_at_ns = coalesce(heartbeat_ns, "
            "started_at_ns) WHERE status = 'running' AND id IN (SELECT run_id FROM buffer_runs "
            "WHERE writer = $1 AND creator AND NOT closed)",
            Params().Text(writer), "cannot write to")
            .status());
  }
  return Run("UPDATE buffer_runs SET closed = true WHERE writer = $1", Params().Text(writer),
             "cannot write to")
      .status();
}

}  // namespace

Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& uri,
                                                 const StoreOptions& options, Env& env,
                                                 PostgresConnect when) {
  FP_ASSIGN_OR_RETURN(const pq::Library* lib, pq::Load(env));
  auto store = std::make_unique<PostgresStore>(lib, uri, options.read_only, env);
  if (when == PostgresConnect::kNow) FP_RETURN_IF_ERROR(store->Connect());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace footprint
