/*
 * example.h - what the example programs share: a seeded generator (the seed is printed;
 * GP_TEST_SEED=N replays a run), the check of a result against a float64 reference
 * element by element and by relative norm, and the last line each program prints.
 */
#ifndef GP_EXAMPLE_H
#define GP_EXAMPLE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <gpuport.h>

/* The run's seed: GP_TEST_SEED, else the clock and the process id. */
static inline uint64_t ex_seed(const char *name) {
  const char *e = getenv("GP_TEST_SEED");
  uint64_t s = e && *e ? strtoull(e, NULL, 10) : (uint64_t)time(NULL) * 1000003u + (uint64_t)getpid();
  printf("%s: seed %llu (GP_TEST_SEED=%llu replays this run)\n", name, (unsigned long long)s,
         (unsigned long long)s);
  return s;
}

/* splitmix64: the next 64 random bits. */
static inline uint64_t ex_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [lo, hi), never exactly zero, rounded to float. */
static inline float ex_uniform(uint64_t *s, double lo, double hi) {
  for (;;) {
    float v = (float)(lo + (hi - lo) * (double)(ex_next(s) >> 11) * 0x1p-53);
    if (v != 0.0f) return v;
  }
}

/* Compares got with the float64 reference: element i must satisfy
 * |got[i] - ref[i]| <= bound[i] (NaN, e.g. an unwritten output, never does), and the
 * relative norm ||got - ref|| / ||ref|| must be below max_rel. Prints the first bad
 * element and the norms; returns the number of bad elements (+1 for the norm). */
static inline size_t ex_check(const char *what, const float *got, const double *ref, const double *bound, size_t n,
                              double max_rel) {
  size_t bad = 0, first = n;
  double err2 = 0, ref2 = 0, max_abs = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - ref[i]);
    if (!(d <= bound[i])) {
      if (first == n) first = i;
      bad++;
    }
    if (d == d) {
      err2 += d * d;
      max_abs = d > max_abs ? d : max_abs;
    }
    ref2 += ref[i] * ref[i];
  }
  double rel = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
  if (bad)
    printf("  %s: %zu of %zu elements out of bounds; first [%zu] = %.9g, reference %.9g, bound %.3g\n", what, bad, n,
           first, (double)got[first], ref[first], bound[first]);
  printf("  %s: max |error| %.3g, relative norm %.3g\n", what, max_abs, rel);
  return bad + (rel <= max_rel ? 0 : 1);
}

/* The last line: "<name> on the <backend> backend, warp width <w>: ok" (or WRONG);
 * returns the exit status. */
static inline int ex_finish(const char *name, size_t bad) {
  gp_device_props_t p;
  gp_device_props_init(&p);
  int dev = 0;
  if (gp_device_get(&dev) != GP_SUCCESS || gp_device_get_props(&p, dev) != GP_SUCCESS) p.warp_size = 0;
  printf("%s on the %s backend, warp width %d: %s\n", name, gp_backend_name(), p.warp_size, bad ? "WRONG" : "ok");
  return bad ? 1 : 0;
}

#endif /* GP_EXAMPLE_H */
