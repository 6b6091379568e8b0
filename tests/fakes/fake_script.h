/* What the fake vendor libraries (fake_nvml.c, fake_dcgm.c) share: their scripts' KEY=VALUE
 * words, and the clock their values follow (real monotonic time since the script was loaded,
 * or the manual time a test sets). */
#ifndef FOOTPRINT_TESTS_FAKES_FAKE_SCRIPT_H_
#define FOOTPRINT_TESTS_FAKES_FAKE_SCRIPT_H_

#include <string.h>
#include <time.h>

/* The value of KEY=VALUE among words[1..n), or NULL. */
static inline const char* FakeValue(char** words, int n, const char* key) {
  size_t len = strlen(key);
  for (int i = 1; i < n; ++i) {
    if (strncmp(words[i], key, len) == 0 && words[i][len] == '=') return words[i] + len + 1;
  }
  return NULL;
}

typedef struct {
  int manual;
  long long manual_ms;
  struct timespec start;
} FakeClock;

static inline void FakeClockStart(FakeClock* c) { clock_gettime(CLOCK_MONOTONIC, &c->start); }

static inline long long FakeClockMs(const FakeClock* c) {
  if (c->manual) return c->manual_ms;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - c->start.tv_sec) * 1000LL + (now.tv_nsec - c->start.tv_nsec) / 1000000LL;
}

#endif /* FOOTPRINT_TESTS_FAKES_FAKE_SCRIPT_H_ */
