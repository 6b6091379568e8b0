/* A fake libdcgm for the tests: the DCGM functions footprint's DCGM source uses, with the
 * dcgmFieldValue_v2 and dcgmMigHierarchy_v2 layouts of DCGM 3.x/4.x, answering from a script
 * named by FAKE_DCGM_SCRIPT (dcgmInit fails with DCGM_ST_INIT_ERROR without one). One statement
 * per line, '#' starts a comment, values are KEY=VALUE words:
 *
 *   hostengine 0|1      whether dcgmConnect_v2 finds a host engine (default 1)
 *   embedded 0|1        whether dcgmStartEmbedded works (default 1)
 *   clock manual        time comes from fake_dcgm_set_time_ms() (else real monotonic time)
 *   update_ms 100       DCGM's update period: a watched field gets a new value, stamped with
 *                       the period's end, once per period after its watch started
 *   other_watch field=1002 entity=0 interval_us=1000000
 *                       another user's watch on GPU `entity`, there before footprint's
 *   gpu sm_active=0.4 sm_occupancy=.. tensor=.. dram=.. fp64=.. fp32=.. fp16=.. (ratios 0..1)
 *       pcie_tx=.. pcie_rx=.. nvlink_tx=.. nvlink_rx=.. (bytes/s) unsupported=1011,1012
 *       profiling=0     a GPU (id = order of the gpu lines); profiling=0 refuses every watch of
 *                       profiling fields with DCGM_ST_PROFILING_NOT_SUPPORTED
 *   gpu_i gpu=N gi=G sm_active=..    a MIG GPU instance of GPU N with NVML instance id G
 *
 * Tests read the watches back through fake_dcgm_watchers(field, entity_group, entity) and
 * fake_dcgm_watch_interval_us(field, entity_group, entity).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_script.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

enum {
  kOk = 0,
  kBadParam = -1,
  kNotSupported = -6,
  kInitError = -7,
  kNoData = -14,
  kVerMismatch = -12,
  kConnectionNotValid = -21,
  kProfilingNotSupported = -36,
};
enum { kEntityGpu = 1, kEntityGpuInstance = 4 };

#define kFields 11
static const struct {
  unsigned short id;
  const char* name;
  int is_int;
} kField[kFields] = {{1002, "sm_active", 0}, {1003, "sm_occupancy", 0}, {1004, "tensor", 0},
                     {1005, "dram", 0},      {1006, "fp64", 0},         {1007, "fp32", 0},
                     {1008, "fp16", 0},      {1009, "pcie_tx", 1},      {1010, "pcie_rx", 1},
                     {1011, "nvlink_tx", 1}, {1012, "nvlink_rx", 1}};

typedef struct {
  unsigned group, id; /* entity */
  unsigned gpu, gi;   /* GPU instances: their GPU and NVML instance id */
  double value[kFields];
  unsigned unsupported; /* bit per kField */
  int profiling;
} Entity;

typedef struct {
  int used;
  unsigned group, id;
  unsigned short field;
  long long interval_us;
  long long since_ms;
  int owner; /* 0: another user; else footprint's group id */
} Watch;

#define kMax 64
static struct {
  int initialised, hostengine, embedded;
  long long update_ms;
  FakeClock clock;
  Entity entities[kMax];
  int entity_count, gpu_count;
  Watch watches[kMax * 4];
  /* groups: entity of each (one entity per group here), field groups: their fields */
  unsigned group_entity[kMax][2];
  int group_used[kMax];
  unsigned short field_groups[kMax][kFields];
  int field_group_n[kMax];
} g;

FAKE_EXPORT void fake_dcgm_set_time_ms(long long ms) { g.clock.manual_ms = ms; }

static long long NowMs(void) { return FakeClockMs(&g.clock); }

#define Value FakeValue

static double Number(char** words, int n, const char* key, double def) {
  const char* v = Value(words, n, key);
  return v ? strtod(v, NULL) : def;
}

static int AddWatch(unsigned group, unsigned id, unsigned short field, long long interval_us,
                    int owner) {
  for (int i = 0; i < kMax * 4; ++i) {
    if (g.watches[i].used) continue;
    g.watches[i] = (Watch){1, group, id, field, interval_us, NowMs(), owner};
    return kOk;
  }
  return kBadParam;
}

static int LoadScript(void) {
  memset(&g, 0, sizeof g);
  g.hostengine = g.embedded = 1;
  g.update_ms = 100;
  FakeClockStart(&g.clock);
  const char* path = getenv("FAKE_DCGM_SCRIPT");
  FILE* f = path ? fopen(path, "r") : NULL;
  if (!f) return kInitError;
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    char* words[32];
    int n = 0;
    for (char* w = strtok(line, " \t\n"); w && n < 32 && w[0] != '#'; w = strtok(NULL, " \t\n")) {
      words[n++] = w;
    }
    if (n == 0) continue;
    if (strcmp(words[0], "hostengine") == 0 && n == 2) {
      g.hostengine = atoi(words[1]);
    } else if (strcmp(words[0], "embedded") == 0 && n == 2) {
      g.embedded = atoi(words[1]);
    } else if (strcmp(words[0], "clock") == 0 && n == 2) {
      g.clock.manual = strcmp(words[1], "manual") == 0;
    } else if (strcmp(words[0], "update_ms") == 0 && n == 2) {
      g.update_ms = atoll(words[1]);
    } else if (strcmp(words[0], "other_watch") == 0) {
      AddWatch(kEntityGpu, (unsigned)Number(words, n, "entity", 0),
               (unsigned short)Number(words, n, "field", 0),
               (long long)Number(words, n, "interval_us", 1000000), 0);
    } else if ((strcmp(words[0], "gpu") == 0 || strcmp(words[0], "gpu_i") == 0) &&
               g.entity_count < kMax) {
      Entity* e = &g.entities[g.entity_count++];
      const int instance = words[0][3] == '_';
      e->group = instance ? kEntityGpuInstance : kEntityGpu;
      e->id = instance ? 100 + (unsigned)g.entity_count : (unsigned)g.gpu_count++;
      e->gpu = (unsigned)Number(words, n, "gpu", e->id);
      e->gi = (unsigned)Number(words, n, "gi", 0);
      e->profiling = (int)Number(words, n, "profiling", 1);
      const char* unsupported = Value(words, n, "unsupported");
      for (int k = 0; k < kFields; ++k) {
        e->value[k] = Number(words, n, kField[k].name, 0);
        char id[8];
        snprintf(id, sizeof id, "%u", kField[k].id);
        if (unsupported && strstr(unsupported, id)) e->unsupported |= 1u << k;
      }
    } else {
      fprintf(stderr, "fake DCGM: %s: cannot understand '%s'\n", path, words[0]);
      fclose(f);
      return kBadParam;
    }
  }
  fclose(f);
  return kOk;
}

static Entity* Find(unsigned group, unsigned id) {
  for (int i = 0; i < g.entity_count; ++i) {
    if (g.entities[i].group == group && g.entities[i].id == id) return &g.entities[i];
  }
  return NULL;
}

/* ---- the API ----------------------------------------------------------------------------- */

FAKE_EXPORT int dcgmInit(void) {
  int rc = LoadScript();
  g.initialised = rc == kOk;
  return rc;
}
FAKE_EXPORT int dcgmShutdown(void) {
  g.initialised = 0;
  return kOk;
}
FAKE_EXPORT const char* errorString(int rc) {
  switch (rc) {
    case kConnectionNotValid:
      return "Connection to the host engine is not valid any longer";
    case kProfilingNotSupported:
      return "This GPU does not support profiling or profiling is not supported for this GPU";
    case kNotSupported:
      return "This request is not supported";
    default:
      return NULL;
  }
}

typedef struct {
  unsigned version, persist, timeout_ms, unix_socket;
} ConnectParams;

FAKE_EXPORT int dcgmConnect_v2(const char* address, ConnectParams* params, uintptr_t* handle) {
  if (!g.initialised) return kInitError;
  if (!address || !params || params->version != (sizeof *params | 2u << 24)) return kVerMismatch;
  if (!g.hostengine) return kConnectionNotValid;
  *handle = 1;
  return kOk;
}
FAKE_EXPORT int dcgmDisconnect(uintptr_t handle) { return handle == 1 ? kOk : kBadParam; }
FAKE_EXPORT int dcgmStartEmbedded(int mode, uintptr_t* handle) {
  if (!g.initialised || mode != 1) return kBadParam;
  if (!g.embedded) return kInitError;
  *handle = 2;
  return kOk;
}
FAKE_EXPORT int dcgmStopEmbedded(uintptr_t handle) { return handle == 2 ? kOk : kBadParam; }

FAKE_EXPORT int dcgmGroupCreate(uintptr_t h, int type, const char* name, uintptr_t* group) {
  (void)h;
  if (type != 1 || !name) return kBadParam;
  for (int i = 1; i < kMax; ++i) {
    if (g.group_used[i]) continue;
    g.group_used[i] = 1;
    g.group_entity[i][0] = g.group_entity[i][1] = 0;
    *group = (uintptr_t)i;
    return kOk;
  }
  return kBadParam;
}
FAKE_EXPORT int dcgmGroupAddEntity(uintptr_t h, uintptr_t group, unsigned eg, unsigned id) {
  (void)h;
  if (group >= kMax || !g.group_used[group] || !Find(eg, id)) return kBadParam;
  g.group_entity[group][0] = eg;
  g.group_entity[group][1] = id;
  return kOk;
}
FAKE_EXPORT int dcgmGroupDestroy(uintptr_t h, uintptr_t group) {
  (void)h;
  if (group >= kMax || !g.group_used[group]) return kBadParam;
  g.group_used[group] = 0;
  return kOk;
}
FAKE_EXPORT int dcgmFieldGroupCreate(uintptr_t h, int n, unsigned short* ids, const char* name,
                                     uintptr_t* fg) {
  (void)h;
  (void)name;
  if (n <= 0 || n > kFields) return kBadParam;
  for (int i = 1; i < kMax; ++i) {
    if (g.field_group_n[i]) continue;
    memcpy(g.field_groups[i], ids, (size_t)n * sizeof *ids);
    g.field_group_n[i] = n;
    *fg = (uintptr_t)i;
    return kOk;
  }
  return kBadParam;
}
FAKE_EXPORT int dcgmFieldGroupDestroy(uintptr_t h, uintptr_t fg) {
  (void)h;
  if (fg >= kMax || !g.field_group_n[fg]) return kBadParam;
  g.field_group_n[fg] = 0;
  return kOk;
}
FAKE_EXPORT int dcgmWatchFields(uintptr_t h, uintptr_t group, uintptr_t fg, long long freq_us,
                                double max_age, int max_samples) {
  (void)h;
  (void)max_age;
  (void)max_samples;
  if (group >= kMax || !g.group_used[group] || fg >= kMax || !g.field_group_n[fg]) {
    return kBadParam;
  }
  Entity* e = Find(g.group_entity[group][0], g.group_entity[group][1]);
  if (!e) return kBadParam;
  if (!e->profiling) return kProfilingNotSupported;
  for (int k = 0; k < g.field_group_n[fg]; ++k) {
    AddWatch(e->group, e->id, g.field_groups[fg][k], freq_us, (int)group);
  }
  return kOk;
}
FAKE_EXPORT int dcgmUnwatchFields(uintptr_t h, uintptr_t group, uintptr_t fg) {
  (void)h;
  (void)fg;
  for (int i = 0; i < kMax * 4; ++i) {
    if (g.watches[i].used && g.watches[i].owner == (int)group) g.watches[i].used = 0;
  }
  return kOk;
}
FAKE_EXPORT int dcgmUpdateAllFields(uintptr_t h, int wait) {
  (void)h;
  (void)wait;
  for (int i = 0; i < kMax * 4; ++i) {
    if (g.watches[i].used) g.watches[i].since_ms = NowMs() - g.update_ms; /* one value now */
  }
  return kOk;
}

typedef struct {
  unsigned group, id;
} EntityPair;

typedef struct {
  unsigned version, entity_group, entity_id;
  unsigned short field_id, field_type;
  int status;
  unsigned unused;
  int64_t ts;
  union {
    int64_t i64;
    double dbl;
    char blob[4096];
  } value;
} FieldValue;

FAKE_EXPORT int dcgmEntitiesGetLatestValues(uintptr_t h, EntityPair* entities, unsigned count,
                                            unsigned short* fields, unsigned field_count,
                                            unsigned flags, FieldValue* values) {
  (void)h;
  if (!entities || !fields || !values || flags != 0) return kBadParam;
  const long long now = NowMs();
  unsigned out = 0;
  /* Newest last: DCGM does not promise an order, and footprint must not rely on one. */
  for (int e = (int)count - 1; e >= 0; --e) {
    for (int f = (int)field_count - 1; f >= 0; --f) {
      FieldValue* v = &values[out++];
      if (v->version != (sizeof *v | 2u << 24)) return kVerMismatch;
      memset((char*)v + 4, 0, sizeof *v - 4);
      v->entity_group = entities[e].group;
      v->entity_id = entities[e].id;
      v->field_id = fields[f];
      const Entity* ent = Find(entities[e].group, entities[e].id);
      int k = 0;
      while (k < kFields && kField[k].id != fields[f]) ++k;
      v->field_type = k < kFields && kField[k].is_int ? 'i' : 'd';
      if (!ent || k == kFields || (ent->unsupported & (1u << k))) {
        v->status = kNotSupported;
        continue;
      }
      const Watch* w = NULL;
      for (int i = 0; i < kMax * 4; ++i) {
        const Watch* c = &g.watches[i];
        if (c->used && c->group == ent->group && c->id == ent->id && c->field == fields[f]) w = c;
      }
      const long long period = g.update_ms > 0 ? g.update_ms : 1;
      if (!w || now - w->since_ms < period) {
        v->status = kNoData;
        continue;
      }
      v->ts = 1700000000000000LL + now / period * period * 1000;
      if (kField[k].is_int) {
        v->value.i64 = (int64_t)ent->value[k];
      } else {
        v->value.dbl = ent->value[k];
      }
    }
  }
  return kOk;
}

typedef struct {
  EntityPair entity, parent;
  char uuid[128];
  unsigned gpu_index, instance_id, compute_instance_id, profile_id, slices;
} HierarchyInfo;

typedef struct {
  unsigned version, count;
  HierarchyInfo entities[448];
} Hierarchy;

FAKE_EXPORT int dcgmGetGpuInstanceHierarchy(uintptr_t h, Hierarchy* out) {
  (void)h;
  if (!out || out->version != (sizeof *out | 2u << 24)) return kVerMismatch;
  out->count = 0;
  for (int i = 0; i < g.entity_count; ++i) {
    const Entity* e = &g.entities[i];
    if (e->group != kEntityGpuInstance) continue;
    HierarchyInfo* info = &out->entities[out->count++];
    info->entity = (EntityPair){e->group, e->id};
    info->parent = (EntityPair){kEntityGpu, e->gpu};
    info->gpu_index = e->gpu;
    info->instance_id = e->gi;
  }
  return kOk;
}

/* ---- for the tests ----------------------------------------------------------------------- */

static int Matches(const Watch* w, unsigned short field, unsigned group, unsigned id) {
  return w->used && w->field == field && w->group == group && w->id == id;
}

FAKE_EXPORT int fake_dcgm_watchers(unsigned short field, unsigned group, unsigned id) {
  int n = 0;
  for (int i = 0; i < kMax * 4; ++i) n += Matches(&g.watches[i], field, group, id);
  return n;
}

/* DCGM's interval for a field: the shortest any watcher asked for (0: not watched). */
FAKE_EXPORT long long fake_dcgm_watch_interval_us(unsigned short field, unsigned group,
                                                  unsigned id) {
  long long best = 0;
  for (int i = 0; i < kMax * 4; ++i) {
    const Watch* w = &g.watches[i];
    if (Matches(w, field, group, id) && (best == 0 || w->interval_us < best)) best = w->interval_us;
  }
  return best;
}
