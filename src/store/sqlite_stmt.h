// A prepared SQLite statement and the binder BindRun takes (store/rows.h), for the SQLite
// store and the local buffer of a server store (store/buffered_store.h).
#ifndef FOOTPRINT_STORE_SQLITE_STMT_H_
#define FOOTPRINT_STORE_SQLITE_STMT_H_

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace footprint {

// Bytes bound as a BLOB (text is bound as TEXT).
struct SqlBlob {
  std::string_view bytes;
};

// A prepared statement, reset after each use.
class Stmt {
 public:
  Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(stmt_); }

  int Prepare(sqlite3* db, std::string_view sql) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
    return sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  }
  sqlite3_stmt* get() const { return stmt_; }
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void Bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void Bind(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void BindNull(int i) { sqlite3_bind_null(stmt_, i); }
  void BindBlob(int i, std::string_view v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  template <typename T>
  void BindOpt(int i, const std::optional<T>& v) {
    if (v) {
      Bind(i, static_cast<int64_t>(*v));
    } else {
      BindNull(i);
    }
  }
  // Binds `args` as parameters 1, 2, ...: integers, doubles, text, SqlBlob, and std::nullopt or
  // an empty std::optional as NULL.
  template <typename... Args>
  void BindAll(const Args&... args) {
    int i = 0;
    (BindValue(++i, args), ...);
  }
  // Prepare, then BindAll when it succeeded: SQLITE_OK or SQLite's error.
  template <typename... Args>
  int PrepareWith(sqlite3* db, std::string_view sql, const Args&... args) {
    const int rc = Prepare(db, sql);
    if (rc == SQLITE_OK) BindAll(args...);
    return rc;
  }
  int Step() { return sqlite3_step(stmt_); }
  // Steps through the rows, handing each to `row` (as this statement): true when every row was
  // read (SQLITE_DONE), false when SQLite failed on the way.
  template <typename RowFn>
  bool ForEachRow(RowFn&& row) {
    int rc;
    while ((rc = Step()) == SQLITE_ROW) row(static_cast<const Stmt&>(*this));
    return rc == SQLITE_DONE;
  }

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Real(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
  }
  std::string_view Blob(int col) const {
    const void* b = sqlite3_column_blob(stmt_, col);
    return {static_cast<const char*>(b), static_cast<size_t>(sqlite3_column_bytes(stmt_, col))};
  }
  std::optional<int64_t> OptInt(int col) const {
    if (IsNull(col)) return std::nullopt;
    return Int(col);
  }

 private:
  template <typename T>
  void BindValue(int i, const T& v) {
    if constexpr (std::is_same_v<T, std::nullopt_t>) {
      BindNull(i);
    } else if constexpr (requires { v.has_value(); }) {
      v ? BindValue(i, *v) : BindNull(i);
    } else if constexpr (std::is_same_v<T, SqlBlob>) {
      BindBlob(i, v.bytes);
    } else if constexpr (std::is_floating_point_v<T>) {
      Bind(i, static_cast<double>(v));
    } else if constexpr (std::is_integral_v<T>) {
      Bind(i, static_cast<int64_t>(v));
    } else {
      Bind(i, std::string_view(v));
    }
  }

  sqlite3_stmt* stmt_ = nullptr;
};

// Runs `sql`, a statement without rows, with `args` bound (Stmt::BindAll): SQLITE_DONE, or
// SQLite's error.
template <typename... Args>
int ExecWith(sqlite3* db, std::string_view sql, const Args&... args) {
  Stmt s;
  const int rc = s.PrepareWith(db, sql, args...);
  return rc == SQLITE_OK ? s.Step() : rc;
}

// The binder BindRun takes.
struct StmtBinder {
  Stmt& s;
  void Text(int i, std::string_view v) { s.Bind(i, v); }
  void Int(int i, int64_t v) { s.Bind(i, v); }
  void Null(int i) { s.BindNull(i); }
};

}  // namespace footprint

#endif  // FOOTPRINT_STORE_SQLITE_STMT_H_
