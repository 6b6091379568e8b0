/* A fake CUDA driver (libcuda.so.1) for the GPU-time tests, loaded through
 * FOOTPRINT_CUDA_LIBRARY on machines without a GPU. It implements the few driver entry points
 * footprint uses, as strictly as the real driver where it matters to footprint:
 *   - a context is current per thread (fake_cuda_make_current / cuCtxPushCurrent_v2), and event
 *     calls fail with CUDA_ERROR_INVALID_CONTEXT on a thread without one;
 *   - the "GPU" has a clock the test advances (fake_cuda_advance_ms); an event records the
 *     clock when recorded, and cuEventElapsedTime returns the difference, so elapsed times are
 *     scripted;
 *   - work completes when the test says so (fake_cuda_set_complete): until then cuEventQuery
 *     returns CUDA_ERROR_NOT_READY, and cuEventSynchronize completes everything recorded.
 * Only cuEventElapsedTime (not its _v2) is exported, so the fallback to unversioned names is
 * exercised. Thread-safe (one mutex). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

typedef int CUresult;
enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_READY = 600
};

typedef struct FakeEvent {
  uint64_t magic;
  uint64_t sequence; /* 0: never recorded */
  double gpu_ms;
  void* stream;
} FakeEvent;

#define EVENT_MAGIC 0xCDAE7E47ull
#define MAX_DEPTH 8

static int g_context; /* its address is the one context */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static double g_clock_ms;
static uint64_t g_sequence, g_completed;
static int g_complete = 1;
static long g_live_events, g_records;
static void* g_last_stream;
static int g_initialized = 1;
static __thread void* t_stack[MAX_DEPTH];
static __thread int t_depth;

/* --- controls for the tests ---------------------------------------------------------------- */

void fake_cuda_make_current(int yes) {
  t_depth = yes ? 1 : 0;
  t_stack[0] = yes ? &g_context : NULL;
}
void fake_cuda_set_initialized(int yes) { g_initialized = yes; }
void fake_cuda_advance_ms(double ms) {
  pthread_mutex_lock(&g_mu);
  g_clock_ms += ms;
  pthread_mutex_unlock(&g_mu);
}
/* 1: everything recorded so far and later completes at once; 0: nothing completes until 1. */
void fake_cuda_set_complete(int yes) {
  pthread_mutex_lock(&g_mu);
  g_complete = yes;
  if (yes) g_completed = g_sequence;
  pthread_mutex_unlock(&g_mu);
}
long fake_cuda_live_events(void) { return g_live_events; }
long fake_cuda_records(void) { return g_records; }
void* fake_cuda_last_stream(void) { return g_last_stream; }

/* --- the driver API ------------------------------------------------------------------------ */

static int HasContext(void) { return t_depth > 0 && t_stack[t_depth - 1] != NULL; }
static int Valid(const FakeEvent* e) { return e != NULL && e->magic == EVENT_MAGIC; }

CUresult cuCtxGetCurrent(void** ctx) {
  if (ctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *ctx = HasContext() ? t_stack[t_depth - 1] : NULL;
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(void* ctx) {
  if (ctx != &g_context) return CUDA_ERROR_INVALID_CONTEXT;
  if (t_depth == MAX_DEPTH) return CUDA_ERROR_INVALID_VALUE;
  t_stack[t_depth++] = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(void** ctx) {
  if (t_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  void* top = t_stack[--t_depth];
  if (ctx) *ctx = top;
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(void** event, unsigned flags) {
  (void)flags;
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  FakeEvent* e = calloc(1, sizeof *e);
  if (e == NULL) return CUDA_ERROR_INVALID_VALUE;
  e->magic = EVENT_MAGIC;
  __atomic_add_fetch(&g_live_events, 1, __ATOMIC_RELAXED);
  *event = e;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(void* event, void* stream) {
  FakeEvent* e = event;
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!Valid(e)) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_mu);
  e->sequence = ++g_sequence;
  e->gpu_ms = g_clock_ms;
  e->stream = stream;
  g_last_stream = stream;
  ++g_records;
  if (g_complete) g_completed = g_sequence;
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(void* event) {
  FakeEvent* e = event;
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!Valid(e)) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_mu);
  CUresult r = e->sequence <= g_completed ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&g_mu);
  return r;
}

CUresult cuEventSynchronize(void* event) {
  FakeEvent* e = event;
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!Valid(e)) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_mu);
  if (g_completed < e->sequence) g_completed = e->sequence; /* the GPU caught up */
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float* ms, void* start, void* end) {
  FakeEvent *s = start, *e = end;
  if (!HasContext()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!Valid(s) || !Valid(e) || ms == NULL) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_mu);
  CUresult r = s->sequence == 0 || e->sequence == 0 ? CUDA_ERROR_INVALID_HANDLE
               : e->sequence > g_completed          ? CUDA_ERROR_NOT_READY
                                                    : CUDA_SUCCESS;
  if (r == CUDA_SUCCESS) *ms = (float)(e->gpu_ms - s->gpu_ms);
  pthread_mutex_unlock(&g_mu);
  return r;
}

CUresult cuEventDestroy_v2(void* event) {
  FakeEvent* e = event;
  if (!Valid(e)) return CUDA_ERROR_INVALID_HANDLE;
  e->magic = 0;
  free(e);
  __atomic_sub_fetch(&g_live_events, 1, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char** text) {
  switch (error) {
    case CUDA_ERROR_NOT_INITIALIZED:
      *text = "initialization error";
      return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_CONTEXT:
      *text = "invalid device context";
      return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_HANDLE:
      *text = "invalid resource handle";
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}
