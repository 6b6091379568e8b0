#include "probe/dcgm_source.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <type_traits>

namespace footprint {
namespace {

// DCGM's types and constants, as dcgm_structs.h (DCGM 3.x and 4.x alike) declares them.
using Handle = uintptr_t;
constexpr int kOk = 0;
constexpr int kGroupEmpty = 1;                    // DCGM_GROUP_EMPTY
constexpr int kOperationModeAuto = 1;             // DCGM_OPERATION_MODE_AUTO
constexpr unsigned int kEntityGpu = 1;            // DCGM_FE_GPU
constexpr unsigned int kEntityGpuInstance = 4;    // DCGM_FE_GPU_I
constexpr unsigned short kTypeDouble = 'd';       // DCGM_FT_DOUBLE
constexpr unsigned short kTypeInt64 = 'i';        // DCGM_FT_INT64
constexpr double kFp64Blank = 140737488355328.0;  // DCGM_FP64_BLANK; at or above: no value
constexpr int64_t kInt64Blank = 0x7ffffffffffffff0;
constexpr int kStGpuIsLost = -18;

struct ConnectParams {  // dcgmConnectV2Params_v2
  unsigned int version;
  unsigned int persist_after_disconnect;
  unsigned int timeout_ms;
  unsigned int address_is_unix_socket;
};
constexpr unsigned int kConnectParamsVersion = sizeof(ConnectParams) | (2u << 24);

struct EntityPair {  // dcgmGroupEntityPair_t
  unsigned int group;
  unsigned int id;
};

struct FieldValue {  // dcgmFieldValue_v2
  unsigned int version;
  unsigned int entity_group;
  unsigned int entity_id;
  unsigned short field_id;
  unsigned short field_type;
  int status;
  unsigned int unused;
  int64_t ts_us;
  union {
    int64_t i64;
    double dbl;
    char blob[4096];
  } value;
};
static_assert(sizeof(FieldValue) == 4128 && offsetof(FieldValue, value) == 32,
              "dcgmFieldValue_v2 ABI");
constexpr unsigned int kFieldValueVersion = sizeof(FieldValue) | (2u << 24);

struct MigHierarchyInfo {  // dcgmMigHierarchyInfo_v2
  EntityPair entity;
  EntityPair parent;
  char gpu_uuid[128];
  unsigned int nvml_gpu_index;
  unsigned int nvml_instance_id;
  unsigned int nvml_compute_instance_id;
  unsigned int nvml_mig_profile_id;
  unsigned int nvml_profile_slices;
};
struct MigHierarchy {  // dcgmMigHierarchy_v2
  unsigned int version;
  unsigned int count;
  MigHierarchyInfo entities[448];
};
static_assert(sizeof(MigHierarchyInfo) == 164 && sizeof(MigHierarchy) == 73480,
              "dcgmMigHierarchy_v2 ABI");
constexpr unsigned int kMigHierarchyVersion = sizeof(MigHierarchy) | (2u << 24);

// The profiling field behind each activity metric (kGpuMetrics order), its name and the factor
// to the catalogue's unit (ratios to %, bytes/s as they are).
struct Field {
  unsigned short id;
  const char* name;
  double scale;
};
constexpr std::array<Field, kGpuActivityCount> kFields = {{
    {1002, "SM_ACTIVE", 100},
    {1003, "SM_OCCUPANCY", 100},
    {1004, "PIPE_TENSOR_ACTIVE", 100},
    {1005, "DRAM_ACTIVE", 100},
    {1006, "PIPE_FP64_ACTIVE", 100},
    {1007, "PIPE_FP32_ACTIVE", 100},
    {1008, "PIPE_FP16_ACTIVE", 100},
    {1009, "PCIE_TX_BYTES", 1},
    {1010, "PCIE_RX_BYTES", 1},
    {1011, "NVLINK_TX_BYTES", 1},
    {1012, "NVLINK_RX_BYTES", 1},
}};

const char* StatusName(int rc) {
  switch (rc) {
    case -6:
      return "DCGM_ST_NOT_SUPPORTED";
    case -14:
      return "DCGM_ST_NO_DATA";
    case -16:
      return "DCGM_ST_NOT_WATCHED";
    case -17:
      return "DCGM_ST_NO_PERMISSION";
    case kStGpuIsLost:
      return "DCGM_ST_GPU_IS_LOST";
    case -21:
      return "DCGM_ST_CONNECTION_NOT_VALID";
    case -22:
      return "DCGM_ST_GPU_NOT_SUPPORTED";
    case -29:
      return "DCGM_ST_REQUIRES_ROOT";
    case -33:
      return "DCGM_ST_MODULE_NOT_LOADED";
    case -36:
      return "DCGM_ST_PROFILING_NOT_SUPPORTED";
    case -45:
      return "DCGM_ST_INSTANCE_NOT_FOUND";
    default:
      return "DCGM_ST";
  }
}

}  // namespace

struct DcgmSource::Api {
  int (*init)();
  int (*shutdown)();
  int (*connect)(const char*, ConnectParams*, Handle*);
  int (*disconnect)(Handle);
  int (*start_embedded)(int, Handle*);
  int (*stop_embedded)(Handle);
  int (*group_create)(Handle, int, const char*, Handle*);
  int (*group_add_entity)(Handle, Handle, unsigned int, unsigned int);
  int (*group_destroy)(Handle, Handle);
  int (*field_group_create)(Handle, int, unsigned short*, const char*, Handle*);
  int (*field_group_destroy)(Handle, Handle);
  int (*watch)(Handle, Handle, Handle, long long, double, int);
  int (*unwatch)(Handle, Handle, Handle);
  int (*update_all)(Handle, int);
  int (*latest)(Handle, EntityPair*, unsigned int, unsigned short*, unsigned int, unsigned int,
                FieldValue*);
  int (*mig_hierarchy)(Handle, MigHierarchy*);
  const char* (*error_string)(int);

  // Looks every function up in `library` (loaded from `path`); false, with `why` naming the
  // first one missing, when any is.
  bool Bind(void* library, const std::string& path, std::string* why);
};

struct DcgmSource::Watched {
  EntityPair entity{};
  Handle group = 0, field_group = 0;
  bool watching = false;
  std::array<unsigned short, kGpuActivityCount> fields{};
  std::array<size_t, kGpuActivityCount> index{};  // position in GpuActivity of fields[k]
  unsigned int count = 0;
  std::vector<FieldValue> values;  // read into, sized at Watch: no allocation per read
  int64_t last_ts_us = 0;
};

bool DcgmSource::Api::Bind(void* library, const std::string& path, std::string* why) {
  bool complete = true;
  auto bind = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(library, symbol));
    if (fn == nullptr && complete) {
      complete = false;
      *why = std::string("DCGM: ") + symbol + " is not exported by " + path;
    }
  };
  bind(init, "dcgmInit");
  bind(shutdown, "dcgmShutdown");
  bind(connect, "dcgmConnect_v2");
  bind(disconnect, "dcgmDisconnect");
  bind(start_embedded, "dcgmStartEmbedded");
  bind(stop_embedded, "dcgmStopEmbedded");
  bind(group_create, "dcgmGroupCreate");
  bind(group_add_entity, "dcgmGroupAddEntity");
  bind(group_destroy, "dcgmGroupDestroy");
  bind(field_group_create, "dcgmFieldGroupCreate");
  bind(field_group_destroy, "dcgmFieldGroupDestroy");
  bind(watch, "dcgmWatchFields");
  bind(unwatch, "dcgmUnwatchFields");
  bind(update_all, "dcgmUpdateAllFields");
  bind(latest, "dcgmEntitiesGetLatestValues");
  bind(mig_hierarchy, "dcgmGetGpuInstanceHierarchy");
  bind(error_string, "errorString");
  return complete;
}

std::unique_ptr<DcgmSource> DcgmSource::Open(Env& env, std::string* why) {
  if (env.Var("FOOTPRINT_DCGM").value_or("") == "off") {
    *why = "DCGM: not asked (FOOTPRINT_DCGM=off)";
    return nullptr;
  }
  std::unique_ptr<DcgmSource> s(new DcgmSource());
  std::string error, path;
  for (const char* soname : {"libdcgm.so.4", "libdcgm.so.3", "libdcgm.so"}) {
    s->library_ = env.OpenLibrary(soname, &error, &path);
    if (s->library_ != nullptr) break;
  }
  if (s->library_ == nullptr) {
    *why = "DCGM: libdcgm is not installed (" + error + ")";
    return nullptr;
  }
  s->api_ = std::make_unique<Api>();
  Api& a = *s->api_;
  if (!a.Bind(s->library_, path, why)) return nullptr;
  if (int rc = a.init(); rc != kOk) {
    *why = "DCGM: dcgmInit failed: " + s->Describe(rc);
    return nullptr;
  }
  const std::string host = env.Var("FOOTPRINT_DCGM_HOST").value_or("127.0.0.1");
  ConnectParams params{kConnectParamsVersion, 0, 1000, 0};
  int rc = a.connect(host.c_str(), &params, &s->handle_);
  if (rc == kOk) {
    s->mode_ = "host engine at " + host;
    return s;
  }
  const std::string no_engine = "no host engine at " + host + " (" + s->Describe(rc) + ")";
  if (env.Var("FOOTPRINT_DCGM").value_or("") != "embedded") {
    *why = "DCGM: " + no_engine +
           "; start nv-hostengine, or set FOOTPRINT_DCGM=embedded to run DCGM inside footprint";
    a.shutdown();
    return nullptr;
  }
  if (int erc = a.start_embedded(kOperationModeAuto, &s->handle_); erc != kOk) {
    *why = "DCGM: " + no_engine + ", and embedded DCGM would not start (" + s->Describe(erc) + ")";
    a.shutdown();
    return nullptr;
  }
  s->embedded_ = true;
  s->mode_ = "embedded";
  return s;
}

DcgmSource::~DcgmSource() {
  if (api_ == nullptr) return;
  if (handle_ != 0) {
    for (auto& w : watched_) Release(*w);
    embedded_ ? api_->stop_embedded(handle_) : api_->disconnect(handle_);
    api_->shutdown();
  }
  // The library stays loaded: DCGM's threads may outlive the calls above by a moment.
}

std::string DcgmSource::Describe(int rc) const {
  const char* words =
      api_ != nullptr && api_->error_string != nullptr ? api_->error_string(rc) : nullptr;
  return std::string(StatusName(rc)) + "(" + std::to_string(rc) + ")" +
         (words != nullptr ? std::string(" ") + words : std::string());
}

void DcgmSource::Release(Watched& w) {
  // Only footprint's own groups: the watches other users made on the same fields go on.
  if (w.watching) api_->unwatch(handle_, w.group, w.field_group);
  if (w.field_group != 0) api_->field_group_destroy(handle_, w.field_group);
  if (w.group != 0) api_->group_destroy(handle_, w.group);
  w.watching = false;
  w.group = w.field_group = 0;
}

bool DcgmSource::EntityOf(const GpuEntity& gpu, unsigned int* group, unsigned int* id,
                          std::string* why) {
  if (!gpu.is_mig()) {
    *group = kEntityGpu;
    *id = gpu.index;
    return true;
  }
  auto hierarchy = std::make_unique<MigHierarchy>();  // 73 kB: on the heap, once per MIG device
  std::memset(hierarchy.get(), 0, sizeof(MigHierarchy));
  hierarchy->version = kMigHierarchyVersion;
  if (int rc = api_->mig_hierarchy(handle_, hierarchy.get()); rc != kOk) {
    *why = "DCGM: no MIG hierarchy: " + Describe(rc);
    return false;
  }
  for (unsigned int i = 0; i < hierarchy->count && i < 448; ++i) {
    const MigHierarchyInfo& e = hierarchy->entities[i];
    if (e.entity.group == kEntityGpuInstance && e.nvml_gpu_index == gpu.index &&
        gpu.gpu_instance_id && e.nvml_instance_id == *gpu.gpu_instance_id) {
      *group = kEntityGpuInstance;
      *id = e.entity.id;
      return true;
    }
  }
  *why = "DCGM lists no GPU instance for " + gpu.entity;
  return false;
}

int DcgmSource::Watch(const GpuEntity& gpu, const GpuEntity* /*whole*/, GpuActivitySet metrics,
                      std::string* why) {
  auto w = std::make_unique<Watched>();
  if (!EntityOf(gpu, &w->entity.group, &w->entity.id, why)) return -1;
  for (size_t i = 0; i < kGpuActivityCount; ++i) {
    if (!metrics.test(i)) continue;
    w->fields[w->count] = kFields[i].id;
    w->index[w->count++] = i;
  }
  const std::string name = "footprint-" + std::to_string(::getpid()) + "-" +
                           std::to_string(watched_.size()) + "-" + gpu.entity;
  int rc = api_->group_create(handle_, kGroupEmpty, name.c_str(), &w->group);
  if (rc == kOk) rc = api_->group_add_entity(handle_, w->group, w->entity.group, w->entity.id);
  if (rc == kOk) {
    rc = api_->field_group_create(handle_, static_cast<int>(w->count), w->fields.data(),
                                  name.c_str(), &w->field_group);
  }
  if (rc == kOk) {
    rc = api_->watch(handle_, w->group, w->field_group, kWatchIntervalUs, 0.0, 2);
    w->watching = rc == kOk;
  }
  if (rc != kOk) {
    *why = "DCGM cannot watch the profiling fields of " + gpu.entity + ": " + Describe(rc);
    Release(*w);
    return -1;
  }
  w->values.resize(w->count);
  watched_.push_back(std::move(w));
  return static_cast<int>(watched_.size() - 1);
}

GpuActivitySupport DcgmSource::Probe(const GpuEntity& gpu, const GpuEntity* whole) {
  GpuActivitySupport out;
  std::string why;
  const int slot = Watch(gpu, whole, GpuActivitySet().set(), &why);
  if (slot < 0) {
    for (GpuSupport& s : out) s = {false, "", why};
    return out;
  }
  Watched& w = *watched_[static_cast<size_t>(slot)];
  api_->update_all(handle_, 1);  // one update now, rather than waiting for the watch's first
  for (FieldValue& v : w.values) v.version = kFieldValueVersion;
  const int rc = api_->latest(handle_, &w.entity, 1, w.fields.data(), w.count, 0, w.values.data());
  for (size_t k = 0; k < w.count; ++k) {
    const Field& f = kFields[w.index[k]];
    const std::string field = "DCGM field " + std::to_string(f.id) + " (" + f.name + ")";
    int status = rc;
    for (const FieldValue& v : w.values) {
      if (rc == kOk && v.field_id == f.id) status = v.status;
    }
    // No value yet (the profiling module needs a watch interval) is still a field it serves.
    if (status == kOk || status == -14) {
      out[w.index[k]] = {true,
                         field + ", " + mode_ + ", watched every " +
                             std::to_string(kWatchIntervalUs / 1000) + " ms",
                         ""};
    } else {
      out[w.index[k]] = {false, "", "DCGM: " + field + ": " + Describe(status)};
    }
  }
  Release(w);
  watched_.pop_back();
  return out;
}

GpuActivitySource::ReadStatus DcgmSource::Read(int slot, int64_t /*now_ns*/, GpuActivity& out,
                                               std::string* why) {
  Watched& w = *watched_[static_cast<size_t>(slot)];
  for (FieldValue& v : w.values) v.version = kFieldValueVersion;
  const int rc = api_->latest(handle_, &w.entity, 1, w.fields.data(), w.count, 0, w.values.data());
  if (rc != kOk) {
    *why = "DCGM: dcgmEntitiesGetLatestValues: " + Describe(rc);
    return rc == kStGpuIsLost ? ReadStatus::kLost : ReadStatus::kFailed;
  }
  out.fill(std::numeric_limits<double>::quiet_NaN());
  int64_t newest = 0;
  for (const FieldValue& v : w.values) {
    if (v.status != kOk) continue;
    for (size_t k = 0; k < w.count; ++k) {
      if (w.fields[k] != v.field_id) continue;
      const size_t i = w.index[k];
      if (v.field_type == kTypeDouble && v.value.dbl < kFp64Blank && std::isfinite(v.value.dbl)) {
        out[i] = v.value.dbl * kFields[i].scale;
      } else if (v.field_type == kTypeInt64 && v.value.i64 < kInt64Blank) {
        out[i] = static_cast<double>(v.value.i64) * kFields[i].scale;
      }
      newest = std::max(newest, v.ts_us);
    }
  }
  // The same window as the previous read: DCGM has not updated since.
  if (newest == 0 || newest == w.last_ts_us) return ReadStatus::kTooSoon;
  w.last_ts_us = newest;
  return ReadStatus::kValues;
}

}  // namespace footprint
