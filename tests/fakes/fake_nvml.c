/* A fake libnvidia-ml.so.1 for the tests: the NVML functions footprint uses, answering from a
 * script instead of hardware. Built three times by tests/CMakeLists.txt:
 *
 *   full      every function, with the versioned symbols (nvmlInit_v2, ..._v3) a current
 *             driver exports;
 *   minimal   only unversioned symbols (16-byte nvmlProcessInfo_v1_t process lists) and none
 *             of the optional energy counter, per-process utilisation and MIG functions, as an
 *             old driver;
 *   broken    without nvmlDeviceGetCount (a required function).
 *
 * nvmlInit reads the script named by FAKE_NVML_SCRIPT (nvmlInit fails with
 * NVML_ERROR_DRIVER_NOT_LOADED without one). One statement per line, '#' starts a comment,
 * values are KEY=VALUE words ("..." for values with spaces):
 *
 *   driver 550.54.15                driver version string (nvmlSystemGetDriverVersion)
 *   nvml 12.550.54.15               NVML version string
 *   init_error 9                    nvmlInit fails with this code
 *   clock manual                    time comes from fake_nvml_set_time_ms() (else the real
 *                                   monotonic time since nvmlInit)
 *   pids_file PATH                  pid=tree below means every PID listed in PATH (read at
 *                                   every call: the workload writes it after it starts)
 *   putil_period_ms 50              how often per-process utilisation samples are taken
 *   putil_cost_us 0                 real time each per-process utilisation call takes (1600
 *                                   on an H100 with processes on it; spun on the CPU, or handed
 *                                   to the test's clock, fake_nvml_on_cost)
 *   gpu name=".." uuid=GPU-.. memory_total=B memory_used=B memory_reserved=B util=% power_mw=mW
 *       energy_period_ms=100 energy_start_mj=mJ energy_cost_us=0 sm_clock=MHz temperature=C mig=1
 *       lost_after_ms=T unsupported=util,memory,power,energy,clock,temperature,processes,
 *       graphics,putil
 *                                   a GPU (index = order of the gpu lines); memory the
 *                                   driver reserves counts as used for the unversioned
 *                                   nvmlDeviceGetMemoryInfo, not for _v2 (as drivers do); its energy
 *                                   counter advances by power x energy_period_ms at every
 *                                   period, and each reading of it takes energy_cost_us of real
 *                                   time (4000 on an H100, driver 580), but the first reading
 *                                   at or after energy_spike_at_ms=T takes energy_spike_us=US
 *                                   (an H100's took 22 ms once); from lost_after_ms on, every
 *                                   call on it and its MIG devices answers
 *                                   NVML_ERROR_GPU_IS_LOST
 *       fail=FIELDS fail_from_ms=T fail_until_ms=T fail_code=C
 *                                   from T (until T, if given) the FIELDS (names as for
 *                                   unsupported) answer C (default 999, NVML_ERROR_UNKNOWN: a
 *                                   passing error; 3 models a field refused mid-run)
 *       gpm=1 sm_active=% sm_occupancy=% tensor=% dram=% fp64=% fp32=% fp16=% pcie_tx=MiB/s
 *       pcie_rx=MiB/s nvlink_tx=MiB/s nvlink_rx=MiB/s gpm_unsupported=NAMES
 *                                   GPM (full variant only): the device supports it (gpm=0, the
 *                                   default: nvmlGpmQueryDeviceSupport says no); each metric
 *                                   reads the value given between two samples taken apart in
 *                                   time (0 for two samples at once, NaN for dram, as drivers
 *                                   do); the metrics named in gpm_unsupported answer
 *                                   NVML_ERROR_NOT_SUPPORTED; fail=gpm makes the samples fail
 *   mig gpu=N name=.. uuid=MIG-.. memory_total=B memory_used=B gi=G ci=C unsupported=..
 *       sm_active=% ...             a MIG device of GPU N (which needs mig=1); its GPM values
 *                                   are read through nvmlGpmMigSampleGet(GPU N, gi)
 *   process gpu=N [mig=M] kind=compute|graphics pid=tree|PID memory=B|na
 *   putil gpu=N [mig=M] pid=tree|PID sm=%
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_script.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

enum {
  kSuccess = 0,
  kInvalidArgument = 2,
  kNotSupported = 3,
  kNotFound = 6,
  kInsufficientSize = 7,
  kDriverNotLoaded = 9,
  kGpuIsLost = 15,
  kUnknown = 999,
};

enum {
  kNoUtil = 1 << 0,
  kNoMemory = 1 << 1,
  kNoPower = 1 << 2,
  kNoEnergy = 1 << 3,
  kNoClock = 1 << 4,
  kNoTemperature = 1 << 5,
  kNoProcesses = 1 << 6,
  kNoGraphics = 1 << 7,
  kNoProcessUtil = 1 << 8,
  kNoGpm = 1 << 9,
};

/* The GPM metrics the fake computes: NVML's metric ids and the script's names for them. */
static const struct {
  unsigned id;
  const char* name;
} kGpmMetrics[] = {{2, "sm_active"},  {3, "sm_occupancy"}, {5, "tensor"},     {10, "dram"},
                   {11, "fp64"},      {12, "fp32"},        {13, "fp16"},      {20, "pcie_tx"},
                   {21, "pcie_rx"},   {60, "nvlink_rx"},   {61, "nvlink_tx"}};
#define kGpmCount (int)(sizeof kGpmMetrics / sizeof kGpmMetrics[0])

#define kMaxDevices 32
#define kMaxMigs 8
#define kMaxEntries 1024
#define kMaxPids 256

typedef struct Device {
  int is_mig;
  int parent; /* for MIG devices */
  char name[96];
  char uuid[96];
  unsigned long long memory_total, memory_used, memory_reserved;
  unsigned util, power_mw, sm_clock, temperature;
  long long energy_period_ms, energy_cost_us;
  long long energy_spike_at_ms, energy_spike_us; /* -1: no spike */
  unsigned long long energy_start_mj;
  long long lost_after_ms; /* -1: never */
  unsigned unsupported;
  unsigned failing; /* fields answering fail_code between fail_from_ms and fail_until_ms */
  long long fail_from_ms, fail_until_ms;
  int fail_code;
  int mig_enabled;
  int migs[kMaxMigs];
  int mig_count;
  unsigned gi, ci;
  int gpm;
  double gpm_value[16];
  unsigned gpm_unsupported; /* bit i: kGpmMetrics[i] */
} Device;

typedef struct Entry {
  int device;
  int graphics; /* process lines: the graphics list */
  int tree;     /* pid=tree */
  unsigned pid;
  unsigned long long value; /* memory bytes or SM % */
} Entry;

static struct {
  int refcount;
  int init_error;
  char driver[96];
  char nvml[96];
  FakeClock clock;
  char pids_file[512];
  long long putil_period_ms, putil_cost_us;
  Device devices[kMaxDevices];
  int device_count; /* all devices, GPUs and MIG */
  int gpus[kMaxDevices];
  int gpu_count;
  Entry processes[kMaxEntries];
  int process_count;
  Entry putil[kMaxEntries];
  int putil_count;
} g;

FAKE_EXPORT void fake_nvml_set_time_ms(long long ms) { g.clock.manual_ms = ms; }

static long long NowMs(void) { return FakeClockMs(&g.clock); }

/* ---- the script -------------------------------------------------------------------------- */

/* Splits a line into words; "..." groups words, KEY="a b" keeps the quotes out. */
static int Words(char* line, char** words, int max) {
  int n = 0;
  char* p = line;
  while (*p && n < max) {
    while (*p == ' ' || *p == '\t') ++p;
    if (!*p || *p == '#' || *p == '\n') break;
    char* out = p;
    words[n++] = out;
    int quoted = 0;
    while (*p && (quoted || (*p != ' ' && *p != '\t' && *p != '\n'))) {
      if (*p == '"') {
        quoted = !quoted;
        ++p;
        continue;
      }
      *out++ = *p++;
    }
    if (*p) ++p;
    *out = '\0';
  }
  return n;
}

#define Value FakeValue

static unsigned long long Number(char** words, int n, const char* key, unsigned long long def) {
  const char* v = Value(words, n, key);
  return v ? strtoull(v, NULL, 10) : def;
}

static unsigned Unsupported(const char* list) {
  static const struct {
    const char* name;
    unsigned bit;
  } kNames[] = {
      {"util", kNoUtil},           {"memory", kNoMemory},     {"power", kNoPower},
      {"energy", kNoEnergy},       {"clock", kNoClock},       {"temperature", kNoTemperature},
      {"processes", kNoProcesses}, {"graphics", kNoGraphics}, {"putil", kNoProcessUtil},
      {"gpm", kNoGpm}};
  unsigned bits = 0;
  if (!list) return 0;
  for (size_t i = 0; i < sizeof kNames / sizeof kNames[0]; ++i) {
    if (strstr(list, kNames[i].name)) bits |= kNames[i].bit;
  }
  return bits;
}

static int DeviceOf(char** words, int n) {
  const char* gpu = Value(words, n, "gpu");
  if (!gpu) return -1;
  long index = strtol(gpu, NULL, 10);
  if (index < 0 || index >= g.gpu_count) return -1;
  int dev = g.gpus[index];
  const char* mig = Value(words, n, "mig");
  if (!mig) return dev;
  long m = strtol(mig, NULL, 10);
  if (m < 0 || m >= g.devices[dev].mig_count) return -1;
  return g.devices[dev].migs[m];
}

static int ParseEntry(char** words, int n, Entry* e, const char* value_key) {
  e->device = DeviceOf(words, n);
  const char* pid = Value(words, n, "pid");
  if (e->device < 0 || !pid) return -1;
  e->tree = strcmp(pid, "tree") == 0;
  e->pid = e->tree ? 0 : (unsigned)strtoul(pid, NULL, 10);
  const char* kind = Value(words, n, "kind");
  e->graphics = kind && strcmp(kind, "graphics") == 0;
  const char* value = Value(words, n, value_key);
  e->value = value && strcmp(value, "na") == 0 ? ~0ULL : Number(words, n, value_key, 0);
  return 0;
}

static int LoadScript(void) {
  memset(&g.devices, 0, sizeof g.devices);
  g.device_count = g.gpu_count = g.process_count = g.putil_count = 0;
  g.init_error = 0;
  g.clock.manual = 0;
  g.clock.manual_ms = 0;
  g.pids_file[0] = '\0';
  g.putil_period_ms = 50;
  snprintf(g.driver, sizeof g.driver, "%s", "550.54.15");
  snprintf(g.nvml, sizeof g.nvml, "%s", "12.550.54.15");
  const char* path = getenv("FAKE_NVML_SCRIPT");
  if (!path) return kDriverNotLoaded;
  FILE* f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "fake NVML: cannot open FAKE_NVML_SCRIPT=%s: %s\n", path, strerror(errno));
    return kUnknown;
  }
  char line[1024];
  int lineno = 0;
  while (fgets(line, sizeof line, f)) {
    ++lineno;
    char* words[32];
    int n = Words(line, words, 32);
    if (n == 0) continue;
    const char* what = words[0];
    int bad = 0;
    if (strcmp(what, "driver") == 0 && n == 2) {
      snprintf(g.driver, sizeof g.driver, "%s", words[1]);
    } else if (strcmp(what, "nvml") == 0 && n == 2) {
      snprintf(g.nvml, sizeof g.nvml, "%s", words[1]);
    } else if (strcmp(what, "init_error") == 0 && n == 2) {
      g.init_error = atoi(words[1]);
    } else if (strcmp(what, "clock") == 0 && n == 2) {
      g.clock.manual = strcmp(words[1], "manual") == 0;
    } else if (strcmp(what, "pids_file") == 0 && n == 2) {
      snprintf(g.pids_file, sizeof g.pids_file, "%s", words[1]);
    } else if (strcmp(what, "putil_period_ms") == 0 && n == 2) {
      g.putil_period_ms = atoll(words[1]);
    } else if (strcmp(what, "putil_cost_us") == 0 && n == 2) {
      g.putil_cost_us = atoll(words[1]);
    } else if ((strcmp(what, "gpu") == 0 || strcmp(what, "mig") == 0) &&
               g.device_count < kMaxDevices) {
      Device* d = &g.devices[g.device_count];
      d->is_mig = what[0] == 'm';
      if (d->is_mig) {
        int parent = DeviceOf(words, n);
        if (parent < 0 || g.devices[parent].is_mig || !g.devices[parent].mig_enabled ||
            g.devices[parent].mig_count >= kMaxMigs) {
          bad = 1;
        } else {
          d->parent = parent;
          g.devices[parent].migs[g.devices[parent].mig_count++] = g.device_count;
        }
      } else {
        g.gpus[g.gpu_count++] = g.device_count;
      }
      const char* name = Value(words, n, "name");
      const char* uuid = Value(words, n, "uuid");
      snprintf(d->name, sizeof d->name, "%s", name ? name : "Fake GPU");
      snprintf(d->uuid, sizeof d->uuid, "%s", uuid ? uuid : "GPU-00000000-fake");
      d->memory_total = Number(words, n, "memory_total", 1ULL << 34);
      d->memory_used = Number(words, n, "memory_used", 0);
      d->memory_reserved = Number(words, n, "memory_reserved", 0);
      d->util = (unsigned)Number(words, n, "util", 0);
      d->power_mw = (unsigned)Number(words, n, "power_mw", 100000);
      d->energy_period_ms = (long long)Number(words, n, "energy_period_ms", 100);
      d->energy_start_mj = Number(words, n, "energy_start_mj", 123456789ULL);
      d->energy_cost_us = (long long)Number(words, n, "energy_cost_us", 0);
      d->energy_spike_at_ms = (long long)Number(words, n, "energy_spike_at_ms", -1);
      d->energy_spike_us = (long long)Number(words, n, "energy_spike_us", 0);
      d->sm_clock = (unsigned)Number(words, n, "sm_clock", 1410);
      d->temperature = (unsigned)Number(words, n, "temperature", 40);
      d->lost_after_ms =
          Value(words, n, "lost_after_ms") ? (long long)Number(words, n, "lost_after_ms", 0) : -1;
      d->unsupported = Unsupported(Value(words, n, "unsupported"));
      d->failing = Unsupported(Value(words, n, "fail"));
      d->fail_from_ms = (long long)Number(words, n, "fail_from_ms", 0);
      d->fail_until_ms = Value(words, n, "fail_until_ms")
                             ? (long long)Number(words, n, "fail_until_ms", 0)
                             : -1;
      d->fail_code = (int)Number(words, n, "fail_code", kUnknown);
      d->mig_enabled = Number(words, n, "mig", 0) != 0;
      d->gi = (unsigned)Number(words, n, "gi", 0);
      d->ci = (unsigned)Number(words, n, "ci", 0);
      d->gpm = Number(words, n, "gpm", d->is_mig ? g.devices[d->parent].gpm : 0) != 0;
      const char* gpm_unsupported = Value(words, n, "gpm_unsupported");
      for (int i = 0; i < kGpmCount; ++i) {
        const char* v = Value(words, n, kGpmMetrics[i].name);
        d->gpm_value[i] = v ? strtod(v, NULL) : 0;
        if (gpm_unsupported && strstr(gpm_unsupported, kGpmMetrics[i].name)) {
          d->gpm_unsupported |= 1u << i;
        }
      }
      if (!bad) ++g.device_count;
    } else if (strcmp(what, "process") == 0 && g.process_count < kMaxEntries) {
      bad = ParseEntry(words, n, &g.processes[g.process_count], "memory") != 0;
      if (!bad) ++g.process_count;
    } else if (strcmp(what, "putil") == 0 && g.putil_count < kMaxEntries) {
      bad = ParseEntry(words, n, &g.putil[g.putil_count], "sm") != 0;
      if (!bad) ++g.putil_count;
    } else {
      bad = 1;
    }
    if (bad) {
      fprintf(stderr, "fake NVML: %s:%d: cannot understand '%s'\n", path, lineno, what);
      fclose(f);
      return kUnknown;
    }
  }
  fclose(f);
  return kSuccess;
}

/* The PIDs pid=tree stands for. */
static int TreePids(unsigned* pids, int max) {
  if (!g.pids_file[0]) return 0;
  FILE* f = fopen(g.pids_file, "r");
  if (!f) return 0;
  int n = 0;
  unsigned pid;
  while (n < max && fscanf(f, "%u", &pid) == 1) pids[n++] = pid;
  fclose(f);
  return n;
}

/* Expands entries of `device` (and kind) into (pid, value) pairs. */
static int Expand(const Entry* entries, int count, int device, int graphics, unsigned* pids,
                  unsigned long long* values, int max) {
  unsigned tree[kMaxPids];
  int tree_n = -1;
  int n = 0;
  for (int i = 0; i < count && n < max; ++i) {
    const Entry* e = &entries[i];
    if (e->device != device || e->graphics != graphics) continue;
    if (!e->tree) {
      pids[n] = e->pid;
      values[n++] = e->value;
      continue;
    }
    if (tree_n < 0) tree_n = TreePids(tree, kMaxPids);
    for (int t = 0; t < tree_n && n < max; ++t) {
      pids[n] = tree[t];
      values[n++] = e->value;
    }
  }
  return n;
}

/* ---- the API ----------------------------------------------------------------------------- */

typedef Device* nvmlDevice_t;

static int Check(nvmlDevice_t d, unsigned unsupported_bit) {
  if (g.refcount == 0) return 1; /* NVML_ERROR_UNINITIALIZED */
  if (d == NULL || d < g.devices || d >= g.devices + g.device_count) return kInvalidArgument;
  const Device* gpu = d->is_mig ? &g.devices[d->parent] : d;
  if (gpu->lost_after_ms >= 0 && NowMs() >= gpu->lost_after_ms) return kGpuIsLost;
  if (d->unsupported & unsupported_bit) return kNotSupported;
  if (d->failing & unsupported_bit) {
    const long long now = NowMs();
    if (now >= d->fail_from_ms && (d->fail_until_ms < 0 || now < d->fail_until_ms)) {
      return d->fail_code;
    }
  }
  return kSuccess;
}

/* Where the time of costly calls goes when a test drives the clock they are timed on. */
static void (*g_spend)(long long us);
FAKE_EXPORT void fake_nvml_on_cost(void (*spend)(long long us)) { g_spend = spend; }

/* Spends `us` of real time on the CPU, as a costly driver call does, or hands it to the test's
 * clock (fake_nvml_on_cost). The minimal variant has no costly call. */
__attribute__((unused)) static void Spin(long long us) {
  if (us <= 0) return;
  if (g_spend != NULL) {
    g_spend(us);
    return;
  }
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000000LL + (now.tv_nsec - start.tv_nsec) / 1000 < us);
}

static int Init(void) {
  if (g.refcount > 0) {
    ++g.refcount;
    return kSuccess;
  }
  int rc = LoadScript();
  if (rc == kSuccess && g.init_error) rc = g.init_error;
  if (rc != kSuccess) return rc;
  FakeClockStart(&g.clock);
  g.refcount = 1;
  return kSuccess;
}

FAKE_EXPORT int nvmlShutdown(void) {
  if (g.refcount > 0) --g.refcount;
  return kSuccess;
}

FAKE_EXPORT const char* nvmlErrorString(int code) {
  switch (code) {
    case kSuccess:
      return "Success";
    case kNotSupported:
      return "Not Supported";
    case kNotFound:
      return "Not Found";
    case kInsufficientSize:
      return "Insufficient Size";
    case kDriverNotLoaded:
      return "Driver Not Loaded";
    case kGpuIsLost:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

FAKE_EXPORT int nvmlSystemGetDriverVersion(char* version, unsigned length) {
  snprintf(version, length, "%s", g.driver);
  return kSuccess;
}

FAKE_EXPORT int nvmlSystemGetNVMLVersion(char* version, unsigned length) {
  snprintf(version, length, "%s", g.nvml);
  return kSuccess;
}

static int HandleByIndex(unsigned index, nvmlDevice_t* device) {
  if (g.refcount == 0) return 1;
  if (index >= (unsigned)g.gpu_count) return kInvalidArgument;
  *device = &g.devices[g.gpus[index]];
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned length) {
  int rc = Check(d, 0);
  if (rc == kSuccess) snprintf(name, length, "%s", d->name);
  return rc;
}

FAKE_EXPORT int nvmlDeviceGetUUID(nvmlDevice_t d, char* uuid, unsigned length) {
  int rc = Check(d, 0);
  if (rc == kSuccess) snprintf(uuid, length, "%s", d->uuid);
  return rc;
}

typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

FAKE_EXPORT int nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* memory) {
  int rc = Check(d, kNoMemory);
  if (rc != kSuccess) return rc;
  memory->total = d->memory_total;
  memory->used = d->memory_used + d->memory_reserved;
  memory->free = d->memory_total - memory->used;
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetUtilizationRates(nvmlDevice_t d, unsigned* util) {
  int rc = Check(d, kNoUtil);
  if (rc != kSuccess) return rc;
  util[0] = d->util;
  util[1] = d->util / 2;
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned* milliwatts) {
  int rc = Check(d, kNoPower);
  if (rc == kSuccess) *milliwatts = d->power_mw;
  return rc;
}

FAKE_EXPORT int nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned* mhz) {
  int rc = Check(d, kNoClock);
  if (rc != kSuccess) return rc;
  if (type != 1) return kInvalidArgument; /* footprint asks for NVML_CLOCK_SM only */
  *mhz = d->sm_clock;
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned* celsius) {
  int rc = Check(d, kNoTemperature);
  if (rc != kSuccess) return rc;
  if (sensor != 0) return kInvalidArgument;
  *celsius = d->temperature;
  return kSuccess;
}

/* Writes the process list in the layout of the symbol version (16 or 24 bytes a process). */
static int Processes(nvmlDevice_t d, unsigned* count, void* infos, int graphics, size_t stride) {
  int rc = Check(d, graphics ? kNoGraphics : kNoProcesses);
  if (rc != kSuccess) return rc;
  if (count == NULL) return kInvalidArgument;
  unsigned pids[kMaxPids];
  unsigned long long memory[kMaxPids];
  int n =
      Expand(g.processes, g.process_count, (int)(d - g.devices), graphics, pids, memory, kMaxPids);
  if (*count < (unsigned)n || (n > 0 && infos == NULL)) {
    *count = (unsigned)n;
    return kInsufficientSize;
  }
  for (int i = 0; i < n; ++i) {
    unsigned char* e = (unsigned char*)infos + (size_t)i * stride;
    memset(e, 0, stride);
    memcpy(e, &pids[i], sizeof pids[i]);
    memcpy(e + 8, &memory[i], sizeof memory[i]);
    if (stride >= 24 && d->is_mig) {
      memcpy(e + 16, &d->gi, sizeof d->gi);
      memcpy(e + 20, &d->ci, sizeof d->ci);
    }
  }
  *count = (unsigned)n;
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned* c, void* i) {
  return Processes(d, c, i, 0, 16);
}

FAKE_EXPORT int nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t d, unsigned* c, void* i) {
  return Processes(d, c, i, 1, 16);
}

#if !defined(FAKE_NVML_MINIMAL)

FAKE_EXPORT int nvmlInit_v2(void) { return Init(); }

typedef struct {
  unsigned version;
  unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

FAKE_EXPORT int nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t* memory) {
  int rc = Check(d, kNoMemory);
  if (rc != kSuccess) return rc;
  if (memory->version != (sizeof *memory | 2u << 24)) return 25; /* ARGUMENT_VERSION_MISMATCH */
  memory->total = d->memory_total;
  memory->reserved = d->memory_reserved;
  memory->used = d->memory_used;
  memory->free = d->memory_total - d->memory_used - d->memory_reserved;
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
  return HandleByIndex(index, device);
}

FAKE_EXPORT int nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned* c, void* i) {
  return Processes(d, c, i, 0, 24);
}

FAKE_EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned* c, void* i) {
  return Processes(d, c, i, 0, 24);
}

FAKE_EXPORT int nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t d, unsigned* c, void* i) {
  return Processes(d, c, i, 1, 24);
}

FAKE_EXPORT int nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned* c, void* i) {
  return Processes(d, c, i, 1, 24);
}

FAKE_EXPORT int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long* mj) {
  int rc = Check(d, kNoEnergy);
  if (rc != kSuccess) return rc;
  if (d->energy_spike_at_ms >= 0 && NowMs() >= d->energy_spike_at_ms) {
    d->energy_spike_at_ms = -1;
    Spin(d->energy_spike_us);
  } else {
    Spin(d->energy_cost_us);
  }
  /* Real counters advance in steps, at their update period. */
  long long period = d->energy_period_ms > 0 ? d->energy_period_ms : 1;
  long long elapsed = NowMs() / period * period;
  *mj = d->energy_start_mj + (unsigned long long)d->power_mw * (unsigned long long)elapsed / 1000;
  return kSuccess;
}

typedef struct {
  unsigned pid;
  unsigned long long time_stamp;
  unsigned sm_util, mem_util, enc_util, dec_util;
} nvmlProcessUtilizationSample_t;

FAKE_EXPORT int nvmlDeviceGetProcessUtilization(nvmlDevice_t d,
                                                nvmlProcessUtilizationSample_t* samples,
                                                unsigned* count, unsigned long long last_seen) {
  int rc = Check(d, kNoProcessUtil);
  if (rc != kSuccess) return rc;
  if (count == NULL) return kInvalidArgument;
  Spin(g.putil_cost_us);
  /* One sample per process and period, stamped at the period's start (µs). */
  const unsigned long long base_us = 1700000000000000ULL;
  long long period = g.putil_period_ms > 0 ? g.putil_period_ms : 1;
  unsigned long long stamp = base_us + (unsigned long long)(NowMs() / period * period) * 1000;
  unsigned pids[kMaxPids];
  unsigned long long sm[kMaxPids];
  int n = Expand(g.putil, g.putil_count, (int)(d - g.devices), 0, pids, sm, kMaxPids);
  if (n == 0 || stamp <= last_seen) return kNotFound;
  if (samples == NULL || *count < (unsigned)n) {
    *count = (unsigned)n;
    return kInsufficientSize;
  }
  for (int i = 0; i < n; ++i) {
    samples[i].pid = pids[i];
    samples[i].time_stamp = stamp;
    samples[i].sm_util = (unsigned)sm[i];
    samples[i].mem_util = samples[i].enc_util = samples[i].dec_util = 0;
  }
  *count = (unsigned)n;
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned* current, unsigned* pending) {
  int rc = Check(d, 0);
  if (rc != kSuccess) return rc;
  if (d->is_mig) return kNotSupported;
  *current = *pending = (unsigned)d->mig_enabled;
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned* count) {
  int rc = Check(d, 0);
  if (rc != kSuccess) return rc;
  *count = d->mig_enabled ? kMaxMigs : 0;
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned index,
                                                    nvmlDevice_t* mig) {
  int rc = Check(d, 0);
  if (rc != kSuccess) return rc;
  if (!d->mig_enabled || d->is_mig) return kInvalidArgument;
  if (index >= (unsigned)d->mig_count) return kNotFound; /* the numbering may have gaps */
  *mig = &g.devices[d->migs[index]];
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned* id) {
  int rc = Check(d, 0);
  if (rc == kSuccess) *id = d->gi;
  return rc;
}

FAKE_EXPORT int nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned* id) {
  int rc = Check(d, 0);
  if (rc == kSuccess) *id = d->ci;
  return rc;
}

/* ---- GPM ---- */

typedef struct {
  unsigned version;
  unsigned is_supported_device;
} nvmlGpmSupport_t;

typedef struct GpmSample {
  int device; /* -1: never filled */
  long long at_ms;
} GpmSample;

typedef struct {
  unsigned metric_id;
  int nvml_return;
  double value;
  const char *short_name, *long_name, *unit;
} nvmlGpmMetric_t;

typedef struct {
  unsigned version;
  unsigned num_metrics;
  GpmSample *sample1, *sample2;
  nvmlGpmMetric_t metrics[333];
} nvmlGpmMetricsGet_t;

FAKE_EXPORT int nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t* support) {
  int rc = Check(d, 0);
  if (rc != kSuccess) return rc;
  if (support == NULL || support->version != 1) return kInvalidArgument;
  support->is_supported_device = (unsigned)d->gpm;
  return kSuccess;
}

FAKE_EXPORT int nvmlGpmSampleAlloc(GpmSample** sample) {
  if (g.refcount == 0) return 1;
  *sample = calloc(1, sizeof **sample);
  (*sample)->device = -1;
  return kSuccess;
}

FAKE_EXPORT int nvmlGpmSampleFree(GpmSample* sample) {
  free(sample);
  return kSuccess;
}

static int GpmTake(nvmlDevice_t d, GpmSample* sample) {
  int rc = Check(d, kNoGpm);
  if (rc != kSuccess) return rc;
  if (!d->gpm) return kNotSupported;
  sample->device = (int)(d - g.devices);
  sample->at_ms = NowMs();
  return kSuccess;
}

FAKE_EXPORT int nvmlGpmSampleGet(nvmlDevice_t d, GpmSample* sample) {
  if (d != NULL && d >= g.devices && d < g.devices + g.device_count && d->is_mig) {
    return kInvalidArgument; /* MIG devices are sampled through their GPU and instance */
  }
  return GpmTake(d, sample);
}

FAKE_EXPORT int nvmlGpmMigSampleGet(nvmlDevice_t d, unsigned gpu_instance, GpmSample* sample) {
  int rc = Check(d, 0);
  if (rc != kSuccess) return rc;
  if (!d->mig_enabled) return kInvalidArgument;
  for (int m = 0; m < d->mig_count; ++m) {
    Device* mig = &g.devices[d->migs[m]];
    if (mig->gi == gpu_instance) return GpmTake(mig, sample);
  }
  return kInvalidArgument;
}

FAKE_EXPORT int nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* get) {
  if (g.refcount == 0) return 1;
  if (get == NULL || get->version != 1 || get->num_metrics > 333 || !get->sample1 ||
      !get->sample2 || get->sample1->device < 0 || get->sample1->device != get->sample2->device) {
    return kInvalidArgument;
  }
  const Device* d = &g.devices[get->sample1->device];
  const int apart = get->sample2->at_ms != get->sample1->at_ms;
  for (unsigned k = 0; k < get->num_metrics; ++k) {
    nvmlGpmMetric_t* m = &get->metrics[k];
    m->nvml_return = kNotSupported;
    m->value = 0;
    for (int i = 0; i < kGpmCount; ++i) {
      if (kGpmMetrics[i].id != m->metric_id) continue;
      if (d->gpm_unsupported & (1u << i)) break;
      m->nvml_return = kSuccess;
      m->value = apart ? d->gpm_value[i] : (m->metric_id == 10 ? 0.0 / 0.0 : 0);
      m->short_name = kGpmMetrics[i].name;
    }
  }
  return kSuccess;
}

#endif /* !FAKE_NVML_MINIMAL */

#if !defined(FAKE_NVML_BROKEN)
static int Count(unsigned* count) {
  if (g.refcount == 0) return 1;
  *count = (unsigned)g.gpu_count;
  return kSuccess;
}
#if !defined(FAKE_NVML_MINIMAL)
FAKE_EXPORT int nvmlDeviceGetCount_v2(unsigned* count) { return Count(count); }
#endif
FAKE_EXPORT int nvmlDeviceGetCount(unsigned* count) { return Count(count); }
#endif

FAKE_EXPORT int nvmlInit(void) { return Init(); }

FAKE_EXPORT int nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_t* device) {
  return HandleByIndex(index, device);
}
