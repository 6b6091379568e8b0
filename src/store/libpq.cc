#include "store/libpq.h"

#include <dlfcn.h>

#include <mutex>
#include <optional>
#include <string>

namespace footprint::pq {
namespace {

constexpr char kSoname[] = "libpq.so.5";

// Resolves `symbol` into `fn`; false when the library lacks it.
template <typename Fn>
bool Resolve(void* handle, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(handle, symbol));
  return fn != nullptr;
}

footprint::Result<const Library*> LoadOnce(Env& env) {
  std::string error, path;
  void* handle = env.OpenLibrary(kSoname, &error, &path);
  if (handle == nullptr) {
    return Unsupported("cannot load " + path + " (" + error +
                       "): PostgreSQL databases need libpq; install it (Debian: apt-get install "
                       "libpq5) or give an SQLite file with -o");
  }
  static Library lib;
  const bool all =
      Resolve(handle, "PQconnectdbParams", lib.connectdb_params) &&
      Resolve(handle, "PQstatus", lib.status) &&
      Resolve(handle, "PQerrorMessage", lib.error_message) &&
      Resolve(handle, "PQfinish", lib.finish) && Resolve(handle, "PQreset", lib.reset) &&
      Resolve(handle, "PQsetNoticeProcessor", lib.set_notice_processor) &&
      Resolve(handle, "PQexec", lib.exec) && Resolve(handle, "PQexecParams", lib.exec_params) &&
      Resolve(handle, "PQresultStatus", lib.result_status) &&
      Resolve(handle, "PQresultErrorMessage", lib.result_error_message) &&
      Resolve(handle, "PQresultErrorField", lib.result_error_field) &&
      Resolve(handle, "PQclear", lib.clear) && Resolve(handle, "PQntuples", lib.ntuples) &&
      Resolve(handle, "PQgetvalue", lib.get_value) &&
      Resolve(handle, "PQgetlength", lib.get_length) &&
      Resolve(handle, "PQgetisnull", lib.get_is_null) &&
      Resolve(handle, "PQputCopyData", lib.put_copy_data) &&
      Resolve(handle, "PQputCopyEnd", lib.put_copy_end) &&
      Resolve(handle, "PQgetResult", lib.get_result) &&
      Resolve(handle, "PQlibVersion", lib.lib_version);
  if (!all) {
    const char* why = ::dlerror();
    ::dlclose(handle);
    return Unsupported(path + " is not a usable libpq (it lacks " +
                       (why != nullptr ? why : "a function footprint calls") +
                       "); install Debian's libpq5");
  }
  return &lib;  // the handle stays open for the life of the process
}

}  // namespace

footprint::Result<const Library*> Load(Env& env) {
  static std::mutex mu;
  static std::optional<footprint::Result<const Library*>> loaded;
  std::lock_guard lock(mu);
  if (!loaded) loaded = LoadOnce(env);
  return *loaded;
}

}  // namespace footprint::pq
