/*
 * ref_gemm.c - float64 reference GEMM and its element-wise error bound (ref_gemm.h).
 *
 * Derivation (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., 3.1
 * and Lemma 3.1; fl(x op y) = (x op y)(1 + d), |d| <= u, plus an absolute term below
 * the normal range):
 *
 * 1. Inputs. f16 and bf16 values convert exactly to f32, and the product of two of
 *    them is exact in f32 (22 and 16 significant bits <= 24); f32 products round once.
 *    Either way each product a_ip b_pj carries at most one factor (1 + d).
 * 2. Accumulation. Whatever the order or blocking of the sum (one loop, k panels
 *    accumulated through beta = 1, OpenBLAS's C = beta C then C += alpha * panel, a tree
 *    across threads, FMA or not), the k + 1 leaves alpha a_ip b_pj and beta c_ij sit in
 *    a binary tree of k additions, so each leaf passes through at most k roundings of
 *    additions, one of its product, and one of the scaling by alpha (or beta). With
 *    gamma_n = n u / (1 - n u), u = 2^-24, Lemma 3.1 gives for x = alpha (AB)_ij +
 *    beta c_ij computed in f32:
 *        |x^ - x| <= gamma_{k+2} (|alpha| (|A||B|)_ij + |beta| |c_ij|) =: E0.
 *    When beta == 0 the beta term is absent (C is not read).
 *    Underflow adds at most 2^-150 per operation: (2k + 4) 2^-150 in total, and the
 *    float64 reference itself is off by at most gamma_{k+2}(2^-53) of the same sum.
 * 3. Epilogue (f32). The bias is exact in f32; x + bias rounds once:
 *        E1 = E0 + u (|x + bias| + E0).
 *    ReLU is 1-Lipschitz and exact: E2 = E1. GELU (erf or tanh form) has derivative of
 *    modulus <= 1.13 (the erf form peaks at x = sqrt 2 with 1.1289), so input error
 *    grows by at most 1.15 E1; evaluating 0.5 x (1 + erf(x / sqrt 2)) in f32 with an
 *    erff of <= 2 ulp (CUDA, glibc) costs about 4.3 u |x| (the |t erf'(t)| <= 0.49
 *    propagation of the argument's rounding, 1 + erf, and two products), the tanh form
 *    with its rounded constants about 6 u |x|; we allow 16 u |x|:
 *        E2 = 1.15 E1 + 16 u (|x + bias| + E1).
 * 4. Output. Rounding y to c_type adds u_out (|y| + E2) plus half the subnormal spacing
 *    of c_type (2^-25 f16, 2^-134 bf16, 2^-150 f32). u_out = 2^-24 f32 (a repeat of the
 *    last rounding in 2, harmless), 2^-11 f16, 2^-8 bf16.
 * The bound is worst case, so it is never exceeded by a correct implementation; typical
 * errors are ~sqrt(k) u, which the relative-norm check (gp_ref_gemm_rel_tol) watches.
 * 5. Rounded inputs (gp_ref_gemm_rounded: TF32 tensor cores). Each input rounded with
 *    relative error <= u_in makes each product off by a factor (1 + d1)(1 + d2), so the
 *    product leaves carry an extra gamma_2(u_in) (1 + gamma_{k+2}) |alpha| (|A||B|)_ij;
 *    the additions use u_acc (2^-23 for tensor cores, whose internal sums need not
 *    round to nearest) in place of u in gamma_{k+2}.
 */
#include "ref_gemm.h"

#include <math.h>
#include <stdbool.h>

#include "ref.h"

double gp_ref_gamma(double n, double u) { return n * u / (1.0 - n * u); }

static double elem(const void *x, gp_dtype_t t, int64_t i) { return gp_ref_load(x, t, (size_t)i); }

static double out_subnormal_half_spacing(gp_dtype_t t) {
  switch (t) {
    case GP_F16: return 0x1.0p-25;
    case GP_BF16: return 0x1.0p-134;
    default: return 0x1.0p-150;
  }
}

void gp_ref_gemm(const gp_ref_gemm_t *g, double *ref, double *bound) {
  gp_ref_gemm_rounded(g, 0.0, 0x1.0p-24, ref, bound);
}

void gp_ref_gemm_rounded(const gp_ref_gemm_t *g, double u_in, double u_acc, double *ref,
                         double *bound) {
  const bool row = g->layout == GP_ROW_MAJOR;
  const bool ta = g->transa == GP_OP_T, tb = g->transb == GP_OP_T;
  const double u = 0x1.0p-24, u_out = gp_ref_unit_roundoff(g->c_type);
  const double gam = gp_ref_gamma((double)g->k + 2.0, u_acc) + gp_ref_gamma((double)g->k + 2.0, 0x1.0p-53);
  const double e_in = u_in > 0.0 ? gp_ref_gamma(2.0, u_in) * (1.0 + gam) : 0.0;
  const double tiny = (2.0 * (double)g->k + 4.0) * 0x1.0p-150;
  for (int64_t i = 0; i < g->m; i++) {
    for (int64_t j = 0; j < g->n; j++) {
      double s = 0.0, sabs = 0.0;
      for (int64_t p = 0; p < g->k; p++) {
        int64_t ia, ib;
        if (row) {
          ia = ta ? p * g->lda + i : i * g->lda + p;
          ib = tb ? j * g->ldb + p : p * g->ldb + j;
        } else {
          ia = ta ? p + i * g->lda : i + p * g->lda;
          ib = tb ? j + p * g->ldb : p + j * g->ldb;
        }
        const double av = elem(g->a, g->a_type, ia), bv = elem(g->b, g->b_type, ib);
        s += av * bv;
        sabs += fabs(av * bv);
      }
      const int64_t ic = row ? i * g->ldc + j : i + j * g->ldc;
      double x = g->k > 0 ? g->alpha * s : 0.0;
      const double mag_ab = g->k > 0 ? fabs(g->alpha) * sabs : 0.0;
      double mag = mag_ab;
      if (g->beta != 0.0) {
        const double cv = elem(g->c, g->c_type, ic);
        x += g->beta * cv;
        mag += fabs(g->beta * cv);
      }
      double e = gam * mag + e_in * mag_ab + tiny;
      double y = x;
      if (g->epilogue != GP_EPILOGUE_NONE) {
        const double xb = x + elem(g->bias, g->bias_type, j);
        e = e + u * (fabs(xb) + e) + 0x1.0p-150;
        switch (g->epilogue) {
          case GP_EPILOGUE_BIAS: y = xb; break;
          case GP_EPILOGUE_BIAS_RELU: y = xb > 0.0 ? xb : 0.0; break;
          case GP_EPILOGUE_BIAS_GELU:
            y = 0.5 * xb * (1.0 + erf(xb / sqrt(2.0)));
            e = 1.15 * e + 16.0 * u * (fabs(xb) + e);
            break;
          case GP_EPILOGUE_BIAS_GELU_TANH:
            y = 0.5 * xb * (1.0 + tanh(sqrt(2.0 / M_PI) * (xb + 0.044715 * xb * xb * xb)));
            e = 1.15 * e + 16.0 * u * (fabs(xb) + e);
            break;
          default: break;
        }
      }
      ref[ic] = y;
      bound[ic] = e + u_out * (fabs(y) + e) + out_subnormal_half_spacing(g->c_type);
    }
  }
}

void gp_ref_gemm_untouched(const void *c, gp_dtype_t c_type, size_t n, double *ref, double *bound) {
  for (size_t i = 0; i < n; i++) {
    ref[i] = gp_ref_load(c, c_type, i);
    bound[i] = 0.0;
  }
}

double gp_ref_gemm_rel_tol(int64_t k, gp_dtype_t c_type) {
  return 4.0 * sqrt((double)k + 2.0) * 0x1.0p-24 + gp_ref_unit_roundoff(c_type);
}
