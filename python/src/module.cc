// _footprint: the Python binding of the instrumentation API (include/footprint/api.h) and of
// the command line (src/cli/cli.h).
//
// Thin on purpose: decorators, metric objects, trackers, the UMLAUT compatibility module and
// footprint.load() are pure Python (python/footprint/). Every non-OK Status becomes a
// footprint.FootprintError (a RuntimeError) with the Status message and a `code` attribute
// ("invalid_argument", "not_found", "unsupported", "database", "io", "internal").
//
// The GIL is released around everything that may wait for a thread, a child process or I/O:
// opening a benchmark (creates the database, asks git), closing it (joins the writers and
// stores the run), running the command line. Scope enter/exit keep the GIL: they are a clock
// read and a store into a per-thread ring, cheaper than releasing it.
//
// Thread-safety: as the C++ API (every method from any thread), plus the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/identity.h"
#include "footprint/api.h"
#include "footprint/metrics.h"
#include "footprint/status.h"
#include "footprint/store.h"
#include "store/reconcile.h"
#include "store/stores.h"

namespace footprint::cli {
int Main(int argc, char** argv);  // src/cli/cli.h (declared here: that header needs CLI11)
}  // namespace footprint::cli

namespace footprint::python {
namespace {

namespace py = pybind11;

// footprint.FootprintError, created once at import and never destroyed (it may be raised
// while the interpreter shuts down).
PyObject* g_error = nullptr;

const char* CodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kUnsupported:
      return "unsupported";
    case StatusCode::kDatabase:
      return "database";
    case StatusCode::kIo:
      return "io";
    case StatusCode::kInternal:
      return "internal";
  }
  return "internal";
}

[[noreturn]] void Raise(const Status& status) {
  py::object error = py::reinterpret_borrow<py::object>(g_error)(status.message());
  error.attr("code") = CodeName(status.code());
  PyErr_SetObject(g_error, error.ptr());
  throw py::error_already_set();
}

void Check(const Status& status) {
  if (!status.ok()) Raise(status);
}

RunStatus ParseRunStatus(const std::string& name) {
  std::optional<RunStatus> s = RunStatusFromName(name);
  if (!s || *s == RunStatus::kRunning) {
    Raise(InvalidArgument("unknown run status '" + name +
                          "'; use one of ok, failed, killed, interrupted"));
  }
  return *s;
}

MetricId ParseMetric(const std::string& name) {
  Result<MetricId> id = MetricByName(name);
  if (!id.ok()) Raise(id.status());
  return *id;
}

// A Benchmark as Python holds it. The C++ object is freed when it is closed (run_id and friends
// are kept here, readable after that), or when the wrapper is collected. In a forked child it
// is abandoned instead: its threads do not exist there, so it must never be closed or
// destroyed.
class PyBenchmark {
 public:
  explicit PyBenchmark(std::unique_ptr<Benchmark> bm)
      : bm_(std::move(bm)),
        run_id_(bm_->run_id()),
        location_(bm_->location()),
        joined_(bm_->joined()) {}

  ~PyBenchmark() {
    if (bm_) {
      py::gil_scoped_release release;
      bm_.reset();  // Close()s: joins threads, stores the run
    }
  }

  static std::unique_ptr<PyBenchmark> Open(const std::string& db, const std::string& name,
                                           const std::string& description,
                                           const std::map<std::string, std::string>& tags,
                                           const std::map<std::string, std::string>& params,
                                           bool join,
                                           const std::optional<std::vector<std::string>>& metrics,
                                           int64_t interval_ns, int64_t flush_interval_ns) {
    BenchmarkOptions options;
    options.db = db;
    options.name = name;
    options.description = description;
    options.tags = tags;
    options.params = params;
    options.join = join;
    if (metrics) {
      options.metrics.reset();
      for (const std::string& m : *metrics) {
        options.metrics.set(static_cast<size_t>(ParseMetric(m)));
      }
    }
    if (interval_ns < 1'000'000) Raise(InvalidArgument("the sampling interval must be >= 1 ms"));
    if (flush_interval_ns < 1'000'000) Raise(InvalidArgument("the flush interval must be >= 1 ms"));
    options.interval_ns = interval_ns;
    options.flush_interval_ns = flush_interval_ns;
    Result<std::unique_ptr<Benchmark>> bm = [&] {
      py::gil_scoped_release release;
      return Benchmark::Open(options);
    }();
    if (!bm.ok()) Raise(bm.status());
    return std::make_unique<PyBenchmark>(std::move(bm).value());
  }

  void Close(const std::string& status) {
    RunStatus s = ParseRunStatus(status);
    if (!bm_ || closed_) return;
    closed_ = true;
    Status st;
    {
      py::gil_scoped_release release;
      st = bm_->Close(s);
    }
    // Free it now (each thread that recorded scopes holds a buffer in it), not when Python
    // collects this wrapper. Taken with the GIL held, so no other thread is inside it; the
    // destructor only frees memory: Close() already joined its threads.
    std::unique_ptr<Benchmark> closed = std::move(bm_);
    {
      py::gil_scoped_release release;
      closed.reset();
    }
    Check(st);
  }

  // The hot path: no checks beyond "still usable", no allocation, GIL held.
  uint64_t BeginScope(const ScopeName& name) {
    if (closed_) return 0;
    return bm_->BeginScope(name);
  }
  void EndScope(uint64_t handle) {
    if (handle != 0 && bm_) bm_->EndScope(handle);
  }

  void Log(std::string_view name, double value, std::optional<int64_t> step) {
    Usable().Log(name, value, step);
  }
  void LogAccuracy(double accuracy, double target, std::optional<int64_t> step) {
    Usable().LogAccuracy(accuracy, target, step);
  }
  void LogConfusionMatrix(std::string_view name, const std::vector<std::string>& labels,
                          const std::vector<std::vector<double>>& matrix) {
    Check(Usable().LogConfusionMatrix(name, labels, matrix));
  }
  void LogHyperparameters(std::string_view name, const std::map<std::string, double>& params,
                          std::string_view target_name, double target_value, bool low_means_good) {
    Usable().LogHyperparameters(name, params, target_name, target_value, low_means_good);
  }
  void LogJson(std::string_view name, std::string_view json, std::optional<int64_t> step,
               std::optional<double> value) {
    Check(Usable().LogJson(name, json, step, value));
  }
  void Artifact(std::string_view name, const std::string& path) {
    Check(Usable().Artifact(name, path));
  }

  // Values resolved after their scope ended (GPU time from torch.cuda events).
  void HoldScope(uint64_t handle) {
    if (handle != 0 && bm_ && !closed_) bm_->HoldScope(handle);
  }
  void LogToScope(uint64_t handle, std::string_view name, std::optional<double> value,
                  std::string_view json, bool release) {
    Check(Usable().LogToScope(handle, name, value, json, release));
  }

  uint64_t RequestInterval(const std::string& metric, int64_t interval_ns) {
    MetricId id = ParseMetric(metric);
    if (closed_) return 0;
    return bm_->RequestInterval(id, interval_ns);
  }
  void ReleaseInterval(uint64_t token) {
    if (token != 0 && bm_ && !closed_) bm_->ReleaseInterval(token);
  }

  int64_t NowNs() { return Usable().NowNs(); }
  const std::string& run_id() const { return run_id_; }
  const std::string& location() const { return location_; }
  bool joined() const { return joined_; }
  bool closed() const { return closed_; }

  // In a forked child: forget the benchmark without closing it (its threads live in the
  // parent only). The memory is deliberately leaked.
  void Abandon() {
    (void)bm_.release();
    closed_ = true;
    abandoned_ = true;
  }

 private:
  Benchmark& Usable() {
    if (abandoned_) {
      Raise(InvalidArgument("the benchmark of run " + run_id_ +
                            " belongs to the parent process; open one in this process"));
    }
    if (closed_ || !bm_) Raise(InvalidArgument("the benchmark of run " + run_id_ + " is closed"));
    return *bm_;
  }

  std::unique_ptr<Benchmark> bm_;
  const std::string run_id_;
  const std::string location_;
  const bool joined_;
  bool closed_ = false;
  bool abandoned_ = false;
};

// `bm.scope(name)`: a context manager entered and left in C++, so that a with-statement costs
// two native calls and no Python frame. A plain CPython type rather than a pybind11 class:
// pybind11's argument dispatch costs more than the scope itself (~0.3 us a call on a 2-core VM).
// The object keeps the handle of the scope it opened; entered again before it was left (nested
// in itself, or from another thread), it keeps that scope's handle beside the first, with its
// thread, so that each exit ends the scope its own thread opened. All under the GIL.
struct ScopeObject {
  PyObject_HEAD PyObject* benchmark;  // the Python Benchmark; it holds `native`
  PyObject* label;                    // the name, a str
  PyBenchmark* native;
  ScopeName name;  // placed by ScopeNew (trivially copyable and destructible)
  bool open;
  uint64_t handle;
  unsigned long thread;
  std::vector<std::pair<unsigned long, uint64_t>>* more;  // created when first needed
};

PyObject* ScopeNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *benchmark, *native, *name_handle, *label;
  static const char* kKeywords[] = {"benchmark", "native", "name_handle", "name", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOU", const_cast<char**>(kKeywords), &benchmark,
                                   &native, &name_handle, &label)) {
    return nullptr;
  }
  PyBenchmark* bm;
  const ScopeName* name;
  try {
    bm = py::cast<PyBenchmark*>(py::handle(native));
    name = &py::cast<const ScopeName&>(py::handle(name_handle));
  } catch (const py::cast_error&) {
    PyErr_SetString(PyExc_TypeError, "Scope(benchmark, native, name_handle, name): wrong types");
    return nullptr;
  }
  auto* self = reinterpret_cast<ScopeObject*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  Py_INCREF(benchmark);
  Py_INCREF(label);
  self->benchmark = benchmark;
  self->label = label;
  self->native = bm;
  new (&self->name) ScopeName(*name);
  return reinterpret_cast<PyObject*>(self);
}

void ScopeDealloc(PyObject* obj) {
  auto* self = reinterpret_cast<ScopeObject*>(obj);
  Py_XDECREF(self->benchmark);
  Py_XDECREF(self->label);
  delete self->more;
  PyTypeObject* type = Py_TYPE(obj);
  type->tp_free(obj);
  Py_DECREF(type);
}

PyObject* ScopeEnter(PyObject* obj, PyObject*) {
  auto* self = reinterpret_cast<ScopeObject*>(obj);
  const uint64_t handle = self->native->BeginScope(self->name);
  const unsigned long thread = PyThread_get_thread_ident();
  if (!self->open) {
    self->open = true;
    self->handle = handle;
    self->thread = thread;
  } else {
    if (self->more == nullptr) self->more = new std::vector<std::pair<unsigned long, uint64_t>>;
    self->more->emplace_back(thread, handle);
  }
  Py_INCREF(obj);
  return obj;
}

PyObject* ScopeExit(PyObject* obj, PyObject* const*, Py_ssize_t) {
  auto* self = reinterpret_cast<ScopeObject*>(obj);
  const unsigned long thread = PyThread_get_thread_ident();
  if (self->more != nullptr) {
    for (auto it = self->more->rbegin(); it != self->more->rend(); ++it) {
      if (it->first == thread) {
        self->native->EndScope(it->second);
        self->more->erase(std::next(it).base());
        Py_RETURN_FALSE;
      }
    }
  }
  if (self->open && self->thread == thread) {
    self->open = false;
    self->native->EndScope(self->handle);
  }
  Py_RETURN_FALSE;
}

PyObject* ScopeLabel(PyObject* obj, void*) {
  PyObject* label = reinterpret_cast<ScopeObject*>(obj)->label;
  Py_INCREF(label);
  return label;
}

PyObject* ScopeBenchmark(PyObject* obj, void*) {
  PyObject* benchmark = reinterpret_cast<ScopeObject*>(obj)->benchmark;
  Py_INCREF(benchmark);
  return benchmark;
}

PyMethodDef kScopeMethods[] = {
    {"__enter__", ScopeEnter, METH_NOARGS, nullptr},
    {"__exit__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(ScopeExit)),
     METH_FASTCALL, nullptr},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef kScopeProperties[] = {
    {"name", ScopeLabel, nullptr, "the scope's name", nullptr},
    {"benchmark", ScopeBenchmark, nullptr, "the Benchmark it records into", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot kScopeSlots[] = {
    {Py_tp_new, reinterpret_cast<void*>(ScopeNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(ScopeDealloc)},
    {Py_tp_methods, kScopeMethods},
    {Py_tp_getset, kScopeProperties},
    {Py_tp_doc,
     const_cast<char*>("A named scope of a benchmark: `with bm.scope(\"stage\"):` or "
                       "`@bm.scope(\"stage\")`. Re-entrant and thread-safe: each `with` records "
                       "one scope on the calling thread, nested under the scope that thread is "
                       "in.")},
    {0, nullptr}};

PyType_Spec kScopeSpec = {"footprint._footprint.Scope", sizeof(ScopeObject), 0, Py_TPFLAGS_DEFAULT,
                          kScopeSlots};

int CliMain(const std::vector<std::string>& args) {
  std::vector<std::string> owned = args;
  std::vector<char*> argv;
  for (std::string& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  py::gil_scoped_release release;
  return cli::Main(static_cast<int>(owned.size()), argv.data());
}

// Run id -> status, with runs whose monitor died shown as interrupted (the rule of
// `footprint runs`; the database is opened read-only and not changed).
std::map<std::string, std::string> RunStatuses(const std::string& db) {
  std::map<std::string, std::string> out;
  Status st;
  {
    py::gil_scoped_release release;
    StoreOptions options;
    options.read_only = true;
    Result<std::unique_ptr<Store>> store = OpenStore(db, options);
    if (!store.ok()) {
      st = store.status();
    } else {
      Result<std::vector<RunRecord>> runs = (*store)->ListRuns();
      if (!runs.ok()) {
        st = runs.status();
      } else {
        st = ReconcileInterrupted(**store, *runs, Env::Default());
        for (const RunRecord& r : *runs) out[r.id] = std::string(RunStatusName(r.status));
      }
    }
  }
  Check(st);
  return out;
}

py::list MetricCatalogueList() {
  py::list out;
  for (const MetricInfo& m : MetricCatalogue()) {
    py::dict d;
    d["name"] = std::string(m.name);
    d["unit"] = std::string(m.unit);
    d["entity"] = std::string(m.entity);
    d["meaning"] = std::string(m.meaning);
    out.append(d);
  }
  return out;
}

}  // namespace
}  // namespace footprint::python

PYBIND11_MODULE(_footprint, m) {
  using namespace footprint;          // NOLINT: the module's body only
  using namespace footprint::python;  // NOLINT
  namespace py = pybind11;
  m.doc() = "footprint's native core (use the `footprint` package, not this module)";
  g_error = PyErr_NewExceptionWithDoc(
      "footprint.FootprintError",
      "footprint could not do what was asked; the message says what is wrong and what to do. "
      "`code` names the kind of failure.",
      PyExc_RuntimeError, nullptr);
  if (g_error == nullptr) throw py::error_already_set();
  m.attr("FootprintError") = py::reinterpret_borrow<py::object>(g_error);
  m.attr("__version__") = std::string(FootprintVersion());
  m.attr("SCHEMA_VERSION") = kSchemaVersion;

  py::class_<ScopeName>(m, "ScopeName", "An interned scope name; create once, use often.")
      .def(py::init<std::string_view>(), py::arg("name"))
      .def_property_readonly("id", &ScopeName::id);

  PyObject* scope_type = PyType_FromSpec(&kScopeSpec);
  if (scope_type == nullptr) throw py::error_already_set();
  m.attr("Scope") = py::reinterpret_steal<py::object>(scope_type);

  py::class_<PyBenchmark>(m, "Benchmark")
      .def_static("open", &PyBenchmark::Open, py::arg("db"), py::arg("name"),
                  py::arg("description"), py::arg("tags"), py::arg("params"), py::arg("join"),
                  py::arg("metrics"), py::arg("interval_ns"), py::arg("flush_interval_ns"))
      .def("close", &PyBenchmark::Close, py::arg("status") = "ok")
      .def("begin_scope", &PyBenchmark::BeginScope, py::arg("name"))
      .def("end_scope", &PyBenchmark::EndScope, py::arg("handle"))
      .def("log", &PyBenchmark::Log, py::arg("name"), py::arg("value"),
           py::arg("step") = py::none())
      .def("log_accuracy", &PyBenchmark::LogAccuracy, py::arg("accuracy"), py::arg("target"),
           py::arg("step") = py::none())
      .def("log_confusion_matrix", &PyBenchmark::LogConfusionMatrix, py::arg("name"),
           py::arg("labels"), py::arg("matrix"))
      .def("log_hyperparameters", &PyBenchmark::LogHyperparameters, py::arg("name"),
           py::arg("params"), py::arg("target_name"), py::arg("target_value"),
           py::arg("low_means_good") = true)
      .def("log_json", &PyBenchmark::LogJson, py::arg("name"), py::arg("json"),
           py::arg("step") = py::none(), py::arg("value") = py::none())
      .def("artifact", &PyBenchmark::Artifact, py::arg("name"), py::arg("path"))
      .def("hold_scope", &PyBenchmark::HoldScope, py::arg("handle"))
      .def("log_to_scope", &PyBenchmark::LogToScope, py::arg("handle"), py::arg("name"),
           py::arg("value"), py::arg("json") = "", py::arg("release") = true)
      .def("request_interval", &PyBenchmark::RequestInterval, py::arg("metric"),
           py::arg("interval_ns"))
      .def("release_interval", &PyBenchmark::ReleaseInterval, py::arg("token"))
      .def("now_ns", &PyBenchmark::NowNs)
      .def("abandon", &PyBenchmark::Abandon)
      .def_property_readonly("run_id", &PyBenchmark::run_id)
      .def_property_readonly("location", &PyBenchmark::location)
      .def_property_readonly("joined", &PyBenchmark::joined)
      .def_property_readonly("closed", &PyBenchmark::closed);

  m.def("cli_main", &CliMain, py::arg("argv"),
        "Runs the footprint command line (argv[0] is the program name); returns the exit "
        "status.");
  m.def("run_statuses", &RunStatuses, py::arg("db"));
  m.def("metric_catalogue", &MetricCatalogueList);
  m.def("default_db", &DefaultStoreLocation);
  m.def(
      "sqlite_reader_may_write",
      [](const std::string& path) {
        Result<bool> may_write = SqliteReaderMayWrite(path);
        if (!may_write.ok()) Raise(may_write.status());
        return *may_write;
      },
      py::arg("path"),
      "True when a reader opens this SQLite database read-write with query_only, false for "
      "read-only (src/store/stores.h).");
}
