// libpq, PostgreSQL's client library, opened at run time (dlopen of libpq.so.5 through the Env)
// rather than linked: linked in, it would load OpenSSL, Kerberos and LDAP into every
// `footprint run`, which costs start-up time and resident memory for the many runs that write
// to SQLite. libpq's C ABI has been stable since PostgreSQL 8 (soname libpq.so.5), so the few
// functions and enum values footprint uses are declared here by hand, as NVML's are.
//
// Debian: `apt-get install libpq5` (PostgreSQL's client packages bring it).
// FOOTPRINT_PQ_LIBRARY names another file (tests point it at a missing one).
#ifndef FOOTPRINT_STORE_LIBPQ_H_
#define FOOTPRINT_STORE_LIBPQ_H_

#include <memory>

#include "footprint/env.h"
#include "footprint/status.h"

namespace footprint::pq {

struct Conn;    // PGconn
struct Result;  // PGresult

// ConnStatusType and ExecStatusType values (libpq-fe.h).
inline constexpr int kConnectionOk = 0;
inline constexpr int kCommandOk = 1;
inline constexpr int kTuplesOk = 2;
inline constexpr int kCopyIn = 4;
// PQresultErrorField's code for the SQLSTATE.
inline constexpr int kDiagSqlstate = 'C';

// The functions footprint calls, resolved once per process.
struct Library {
  Conn* (*connectdb_params)(const char* const* keywords, const char* const* values,
                            int expand_dbname);
  int (*status)(const Conn*);
  char* (*error_message)(const Conn*);
  void (*finish)(Conn*);
  void (*reset)(Conn*);
  using NoticeProcessor = void (*)(void* arg, const char* message);
  NoticeProcessor (*set_notice_processor)(Conn*, NoticeProcessor, void* arg);
  Result* (*exec)(Conn*, const char* query);
  Result* (*exec_params)(Conn*, const char* command, int n_params, const unsigned* param_types,
                         const char* const* param_values, const int* param_lengths,
                         const int* param_formats, int result_format);
  int (*result_status)(const Result*);
  char* (*result_error_message)(const Result*);
  char* (*result_error_field)(const Result*, int field_code);
  void (*clear)(Result*);
  int (*ntuples)(const Result*);
  char* (*get_value)(const Result*, int row, int column);
  int (*get_length)(const Result*, int row, int column);
  int (*get_is_null)(const Result*, int row, int column);
  int (*put_copy_data)(Conn*, const char* buffer, int bytes);
  int (*put_copy_end)(Conn*, const char* error);
  Result* (*get_result)(Conn*);
  int (*lib_version)();  // e.g. 150018 for 15.18
};

// libpq, loaded on first use; kUnsupported saying what to install when it cannot be.
footprint::Result<const Library*> Load(Env& env);

}  // namespace footprint::pq

#endif  // FOOTPRINT_STORE_LIBPQ_H_
