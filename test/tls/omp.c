/*
 * omp.c - a shared object built with -fopenmp, so loading it loads libgomp (whose TLS
 * is initial-exec) beside gpuport, as PyTorch does. check.sh builds it.
 */
#include <omp.h>

/* 1 + 2 + ... + n summed by an OpenMP team; *threads receives the team's size. */
__attribute__((visibility("default"))) long gp_tls_omp_sum(long n, int *threads) {
  long s = 0;
  int team = 0;
#pragma omp parallel reduction(+ : s)
  {
#pragma omp single
    team = omp_get_num_threads();
#pragma omp for
    for (long i = 1; i <= n; i++) s += i;
  }
  *threads = team;
  return s;
}
