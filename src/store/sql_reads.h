// The reads both SQL stores make alike: rows.h's queries and readers, written once over each
// store's own way of running a query. A store derives from SqlReads<Itself> (CRTP) and gives
// it, as a friend,
//   static constexpr SqlDialect kDialect;
//   template <typename RowFn>
//   Status QueryRows(std::string_view sql, const std::vector<SqlParam>& params, RowFn row);
// which binds `params` as $1, $2, ..., calls row(r) for each row r (a Row as rows.h reads it) and
// fails with the store's own error. It hands SqlReads its Env (StoreOptions::env), whose wall
// clock ends the durations of running runs when a page of runs is sorted by duration.
#ifndef FOOTPRINT_STORE_SQL_READS_H_
#define FOOTPRINT_STORE_SQL_READS_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "footprint/env.h"
#include "footprint/store.h"
#include "store/rows.h"

namespace footprint {

template <typename Derived>
class SqlReads : public Store {
 public:
  explicit SqlReads(Env& env) : env_(env) {}

  Result<std::vector<ScopeRecord>> ListScopes(const std::string& run_id) override {
    return Rows<ScopeRecord>(kScopesOfRun, {run_id}, [](const auto& r) { return ReadScope(r); });
  }
  Result<std::vector<ValueRecord>> ListValues(const std::string& run_id) override {
    return Rows<ValueRecord>(kValuesOfRun, {run_id}, [](const auto& r) { return ReadValue(r); });
  }
  Result<std::vector<ArtifactRecord>> ListArtifacts(const std::string& run_id) override {
    return Rows<ArtifactRecord>(kArtifactsOfRun, {run_id},
                                [](const auto& r) { return ReadArtifact(r); });
  }
  Result<std::vector<SeriesRecord>> ListSeries(const std::string& run_id) override {
    return Rows<SeriesRecord>(kSeriesOfRun, {run_id}, [](const auto& r) { return ReadSeries(r); });
  }
  Result<std::vector<RunRecord>> ListRuns() override {
    return Runs("ORDER BY started_at_ns, id", {});
  }
  Result<std::vector<RunRecord>> ListRunsWithStatus(RunStatus status) override {
    return Runs("WHERE status = $1 ORDER BY started_at_ns, id",
                {std::string(RunStatusName(status))});
  }
  Result<RunRecord> GetRun(const std::string& id) override {
    FP_ASSIGN_OR_RETURN(std::vector<RunRecord> runs, Runs("WHERE id = $1", {id}));
    if (runs.empty()) return NotFound("no run " + id + " in " + location());
    return std::move(runs.front());
  }
  Result<RunPage> ListRunsPage(const RunQuery& query) override {
    const RunPageSql sql = BuildRunPageSql(query, Derived::kDialect, env_.RealtimeNs());
    RunPage page;
    const std::vector<SqlParam> where(sql.params.begin(), sql.params.begin() + sql.where_params);
    FP_RETURN_IF_ERROR(self().QueryRows(RunPageCountSql(sql), where,
                                        [&](const auto& r) { page.total = r.Int(0); }));
    FP_ASSIGN_OR_RETURN(page.runs, Rows<RunRecord>(RunPageSelectSql(sql, query), sql.params,
                                                   [](const auto& r) { return ReadRun(r); }));
    return page;
  }
  Result<std::map<std::string, double>> LoadTotals(const std::string& run_id) override {
    std::map<std::string, double> out;
    FP_RETURN_IF_ERROR(self().QueryRows(kTotalsOfRun, {run_id},
                                        [&](const auto& r) { out[r.Text(0)] = r.Real(1); }));
    return out;
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }

  Env& env_;

  // Every row of `sql`, read by `read`.
  template <typename Record, typename ReadFn>
  Result<std::vector<Record>> Rows(std::string_view sql, const std::vector<SqlParam>& params,
                                   ReadFn read) {
    std::vector<Record> out;
    FP_RETURN_IF_ERROR(
        self().QueryRows(sql, params, [&](const auto& r) { out.push_back(read(r)); }));
    return out;
  }

  // The runs `rest` (WHERE ..., ORDER BY ...) selects.
  Result<std::vector<RunRecord>> Runs(std::string_view rest, const std::vector<SqlParam>& params) {
    return Rows<RunRecord>("SELECT " + std::string(kRunColumns) + " FROM runs " + std::string(rest),
                           params, [](const auto& r) { return ReadRun(r); });
  }
};

}  // namespace footprint

#endif  // FOOTPRINT_STORE_SQL_READS_H_
