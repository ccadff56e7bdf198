/*
 * test_amd_kernels.c - the LDS layouts of the AMD MFMA kernels (kernels/mfma/gemm_mfma.cu,
 * kernels/mfma/attention_fwd_mfma.cu) are free of bank conflicts, access by access, under the LDS
 * model of kernels/mfma/mfma.h (32 banks of 4 bytes; a wavefront's 16-byte
 * accesses are serviced 8 lanes at a time, 8-byte accesses 16 lanes at a time, in lane
 * order). Every test replays the exact address expressions of a kernel's LDS
 * instructions (the maps of kernels/mfma/mfma.h with the kernel's lane arithmetic) for
 * every wavefront of the block, and a control shows that the same check finds the
 * conflicts of the unswizzled layouts. Host-only: runs on every backend.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuport.h>

#include "check_util.h"
#include "kernels/mfma/mfma.h"

/* Worst number of distinct addresses one bank serves within one lane group of a
 * wavefront access: lane l touches bytes off[l] .. off[l] + width - 1. 1 = no conflict. */
static int conflict_degree(const int off[64], int width) {
  const int group = 128 / width, words = width / 4;
  int worst = 1;
  for (int g0 = 0; g0 < 64; g0 += group) {
    int count[32];
    for (int b = 0; b < 32; b++) count[b] = 0;
    /* A bank may serve one dword address to several lanes (broadcast): count distinct. */
    int seen[32][64];
    for (int l = g0; l < g0 + group; l++)
      for (int w = 0; w < words; w++) {
        const int dword = off[l] / 4 + w, b = dword % 32;
        int dup = 0;
        for (int q = 0; q < count[b]; q++)
          if (seen[b][q] == dword) dup = 1;
        if (!dup) seen[b][count[b]++] = dword;
      }
    for (int b = 0; b < 32; b++)
      if (count[b] > worst) worst = count[b];
  }
  return worst;
}

/* ---- GEMM ----------------------------------------------------------------------------- */
typedef int (*gemm_map_t)(int row, int c);
static int gemm_plain(int row, int c) { return row * GP__AMD_GEMM_ROW_BYTES + 16 * c; }
static int gemm_swizzled(int row, int c) { return gp__amd_gemm_lds_off(row, c); }

/* Worst degree over every LDS instruction of one k stage of the GEMM kernel, for each
 * wavefront: the fragment reads (mf_stage_mfma), then both staging store patterns
 * (mf_stage_store: k contiguous, rows contiguous). */
static void gemm_worst(gemm_map_t map, int *reads, int *writes_k, int *writes_rows) {
  int off[64];
  *reads = *writes_k = *writes_rows = 1;
  for (int w = 0; w < GP__AMD_GEMM_THREADS / 64; w++) {
    const int wm = w % 2, wn = w / 2;
    for (int g = 0; g < 2; g++)
      for (int a = 0; a < 2; a++)
        for (int which = 0; which < 2; which++) { /* X (rows of n) and Y (rows of m) */
          const int base = 64 * (which ? wm : wn) + 32 * a;
          for (int l = 0; l < 64; l++) off[l] = map(base + l % 32, 2 * g + l / 32);
          int d = conflict_degree(off, 16);
          if (d > *reads) *reads = d;
        }
    for (int s = 0; s < 2; s++) {
      for (int l = 0; l < 64; l++) {
        const int t = 64 * w + l;
        off[l] = map(t / 4 + 64 * s, t % 4);
      }
      int d = conflict_degree(off, 16);
      if (d > *writes_k) *writes_k = d;
    }
    for (int which = 0; which < 2; which++) {
      for (int l = 0; l < 64; l++) {
        const int t = 64 * w + l, mp = t % 64, c = t / 64, first = mp & 1;
        off[l] = map(2 * mp + (which ? (first ^ 1) : first), c);
      }
      int d = conflict_degree(off, 16);
      if (d > *writes_rows) *writes_rows = d;
    }
  }
}

START_TEST(test_gemm_lds) {
  int r, wk, wr;
  gemm_worst(gemm_swizzled, &r, &wk, &wr);
  ck_assert_msg(r == 1 && wk == 1 && wr == 1,
                "GEMM LDS conflicts: fragment reads %d-way, k-contiguous stores %d-way, "
                "row-contiguous stores %d-way", r, wk, wr);
  /* Control: without the swizzle the fragment reads conflict 4 ways. */
  gemm_worst(gemm_plain, &r, &wk, &wr);
  ck_assert_msg(r == 4, "unswizzled GEMM fragment reads: %d-way (expected 4)", r);
  /* Every (row, chunk) of a tile has its own 16 bytes inside the tile. */
  static unsigned char used[GP__AMD_GEMM_TILE_BYTES / 16];
  memset(used, 0, sizeof used);
  for (int row = 0; row < GP__AMD_GEMM_BM; row++)
    for (int c = 0; c < 4; c++) {
      const int o = gp__amd_gemm_lds_off(row, c);
      ck_assert(o >= 0 && o % 16 == 0 && o < GP__AMD_GEMM_TILE_BYTES);
      ck_assert_msg(!used[o / 16], "row %d chunk %d reuses bytes %d", row, c, o);
      used[o / 16] = 1;
    }
}
END_TEST

/* ---- attention ----------------------------------------------------------------------- */
typedef int (*k_map_t)(int key, int c, int d);
typedef int (*vt_map_t)(int col, int q);
static int k_plain(int key, int c, int d) { return key * d * 2 + 16 * c; }
static int vt_plain(int col, int q) { return col * GP__AMD_ATTN_BN * 2 + 8 * q; }

/* Worst degree over the LDS instructions of kernels/mfma/attention_fwd_mfma.cu for head_dim d: K
 * fragment reads (S^T = K Q^T), V^T fragment reads (O^T += V^T P^T), and the staging
 * stores of K (16 bytes) and V^T (8 bytes, odd column first where cp & 8). */
static void attn_worst(int d, k_map_t kmap, vt_map_t vmap, int *kr, int *vr, int *kw, int *vw) {
  int off[64];
  *kr = *vr = *kw = *vw = 1;
  for (int t = 0; t < 2; t++)
    for (int G = 0; G < d / 16; G++) {
      for (int l = 0; l < 64; l++) off[l] = kmap(32 * t + l % 32, 2 * G + l / 32, d);
      int x = conflict_degree(off, 16);
      if (x > *kr) *kr = x;
    }
  for (int dt = 0; dt < d / 32; dt++)
    for (int t = 0; t < 2; t++)
      for (int g = 0; g < 4; g++) {
        for (int l = 0; l < 64; l++) off[l] = vmap(32 * dt + l % 32, 8 * t + 2 * g + l / 32);
        int x = conflict_degree(off, 8);
        if (x > *vr) *vr = x;
      }
  const int nc = d / 8;
  for (int w = 0; w < GP__AMD_ATTN_THREADS / 64; w++)
    for (int u = 0; u < d / 32; u++) {
      for (int l = 0; l < 64; l++) {
        const int idx = 64 * w + l + GP__AMD_ATTN_THREADS * u;
        off[l] = kmap(idx / nc, idx % nc, d);
      }
      int x = conflict_degree(off, 16);
      if (x > *kw) *kw = x;
      for (int which = 0; which < 2; which++) {
        for (int l = 0; l < 64; l++) {
          const int idx = 64 * w + l + GP__AMD_ATTN_THREADS * u, cp = idx % (d / 2), kq = idx / (d / 2);
          const int xo = (cp >> 3) & 1;
          off[l] = vmap(2 * cp + (which ? xo ^ 1 : xo), kq);
        }
        x = conflict_degree(off, 8);
        if (x > *vw) *vw = x;
      }
    }
}

START_TEST(test_attention_lds) {
  const int d = 32 << _i; /* 32, 64, 128 */
  int kr, vr, kw, vw;
  attn_worst(d, gp__amd_attn_k_off, gp__amd_attn_vt_off, &kr, &vr, &kw, &vw);
  ck_assert_msg(kr == 1 && vr == 1 && kw == 1 && vw == 1,
                "attention d=%d LDS conflicts: K reads %d-way, V^T reads %d-way, K stores %d-way, "
                "V^T stores %d-way", d, kr, vr, kw, vw);
  /* Control: the unswizzled layouts conflict on the fragment reads. */
  attn_worst(d, k_plain, vt_plain, &kr, &vr, &kw, &vw);
  ck_assert_msg(kr > 1 && vr > 1, "unswizzled attention d=%d: K reads %d-way, V^T reads %d-way", d, kr, vr);
  /* Both maps are one-to-one inside their tiles. */
  static unsigned char used[GP__AMD_ATTN_BN * 128 * 2];
  memset(used, 0, sizeof used);
  for (int key = 0; key < GP__AMD_ATTN_BN; key++)
    for (int c = 0; c < d / 8; c++) {
      const int o = gp__amd_attn_k_off(key, c, d);
      ck_assert(o >= 0 && o + 16 <= GP__AMD_ATTN_BN * d * 2 && !used[o]);
      used[o] = 1;
    }
  memset(used, 0, sizeof used);
  for (int col = 0; col < d; col++)
    for (int q = 0; q < GP__AMD_ATTN_BN / 4; q++) {
      const int o = gp__amd_attn_vt_off(col, q);
      ck_assert(o >= 0 && o + 8 <= d * GP__AMD_ATTN_BN * 2 && !used[o]);
      used[o] = 1;
    }
  ck_assert_int_eq(gp__amd_attn_lds_bytes(d, d), 2 * GP__AMD_ATTN_BN * d * 2);
}
END_TEST

/* Backward (kernels/mfma/attention_bwd_mfma.cu): row tiles of 32 rows (K, V; Q, dO), read by
 * 16-byte fragments; transposed tiles of rows of 32 values (K^T; Q^T, dO^T), read by
 * 8-byte fragments; the staging stores of both (ab_stage_rows, ab_stage_t32). */
typedef int (*t32_map_t)(int row, int q);
static int t32_plain(int row, int q) { return row * 64 + 8 * q; }

static void bwd_worst(int d, t32_map_t tmap, int *rr, int *tr, int *rw, int *tw) {
  int off[64];
  *rr = *tr = *rw = *tw = 1;
  for (int G = 0; G < d / 16; G++) {
    for (int l = 0; l < 64; l++) off[l] = gp__amd_attn_k_off(l % 32, 2 * G + l / 32, d);
    int x = conflict_degree(off, 16);
    if (x > *rr) *rr = x;
  }
  for (int ct = 0; ct < d / 32; ct++)
    for (int g = 0; g < 4; g++) {
      for (int l = 0; l < 64; l++) off[l] = tmap(32 * ct + l % 32, 2 * g + l / 32);
      int x = conflict_degree(off, 8);
      if (x > *tr) *tr = x;
    }
  const int nc = d / 8;
  for (int w = 0; w < GP__AMD_ATTN_THREADS / 64; w++) {
    for (int u = 0; 64 * w + GP__AMD_ATTN_THREADS * u < 32 * nc; u++) {
      int n = 0;
      for (int l = 0; l < 64; l++) {
        const int idx = 64 * w + l + GP__AMD_ATTN_THREADS * u;
        off[l] = idx < 32 * nc ? gp__amd_attn_k_off(idx / nc, idx % nc, d) : -1;
        n += off[l] >= 0;
      }
      if (n == 64) {
        int x = conflict_degree(off, 16);
        if (x > *rw) *rw = x;
      }
    }
    for (int u = 0; 64 * w + GP__AMD_ATTN_THREADS * u < 8 * (d / 2); u++)
      for (int which = 0; which < 2; which++) {
        for (int l = 0; l < 64; l++) {
          const int idx = 64 * w + l + GP__AMD_ATTN_THREADS * u, cp = idx % (d / 2), rq = idx / (d / 2);
          const int x = (cp >> 3) & 1;
          off[l] = tmap(2 * cp + (which ? x ^ 1 : x), rq);
        }
        int x = conflict_degree(off, 8);
        if (x > *tw) *tw = x;
      }
  }
}

START_TEST(test_attention_bwd_lds) {
  const int d = 32 << _i; /* 32, 64, 128 */
  int rr, tr, rw, tw;
  bwd_worst(d, gp__amd_t32_off, &rr, &tr, &rw, &tw);
  ck_assert_msg(rr == 1 && tr == 1 && rw == 1 && tw == 1,
                "attention backward d=%d LDS conflicts: row reads %d-way, transposed reads %d-way, "
                "row stores %d-way, transposed stores %d-way", d, rr, tr, rw, tw);
  bwd_worst(d, t32_plain, &rr, &tr, &rw, &tw);
  ck_assert_msg(tr > 1, "unswizzled transposed tile d=%d: reads %d-way", d, tr);
  static unsigned char used[128 * 64];
  memset(used, 0, sizeof used);
  for (int row = 0; row < d; row++)
    for (int q = 0; q < 8; q++) {
      const int o = gp__amd_t32_off(row, q);
      ck_assert(o >= 0 && o + 8 <= d * 64 && !used[o]);
      used[o] = 1;
    }
  ck_assert_int_eq(gp__amd_attn_bwd_dq_lds_bytes(d, d), 32 * 3 * d * 2);
  ck_assert_int_eq(gp__amd_attn_bwd_dkv_lds_bytes(d, d), 32 * 4 * d * 2 + 256);
}
END_TEST

static Suite *amd_kernels_suite(void) {
  Suite *s = suite_create("amd_kernels");
  TCase *tc = tcase_create("lds");
  case_runs_without_device(tc); /* arithmetic on the layouts: no device call */
  tcase_add_test(tc, test_gemm_lds);
  tcase_add_loop_test(tc, test_attention_lds, 0, 3);
  tcase_add_loop_test(tc, test_attention_bwd_lds, 0, 3);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return run_suite("test_amd_kernels", amd_kernels_suite()); }
