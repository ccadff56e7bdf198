/*
 * ref_comm.h - collective test data and references, shared by the Check suites,
 * `gpuport selftest` and `gpuport bench --check`: each rank's input is a pure function of
 * (seed, rank, element index), so any process can compute any rank's data and the
 * expected result of any collective without talking to the others.
 *
 * Random data: floating inputs uniform in [0.25, 2) ([0.5, 2) for products) with random
 * signs, rounded to the type, never zero; integers uniform over their whole range (so
 * sums and products wrap), never zero. Reductions are compared with a float64
 * reference, element by element against a bound that grows with the number of ranks
 * (GP_AVG included: each input times (T)(1/n)), and by relative norm; integers exactly.
 *
 * Exact data (nccl-tests' check mode): small positive integers (1..4; 1..2 for
 * products), whose sums are exact in any order: results must match exactly, GP_AVG on
 * floating types within 2 ulp.
 */
#ifndef GP_TOOL_REF_COMM_H
#define GP_TOOL_REF_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <gpuport.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gp_ref_comm_data { GP_REF_COMM_RANDOM = 0, GP_REF_COMM_EXACT = 1 } gp_ref_comm_data_t;

/* Writes elements [first, first + n) of rank's input (type t, for reduction op) to dst. */
void gp_ref_comm_inputs(void *dst, gp_dtype_t t, gp_reduce_op_t op, gp_ref_comm_data_t data,
                        uint64_t seed, int rank, size_t first, size_t n);

/* Checks got[i] == op over ranks q < nranks of input_q[first + i], i < n. Returns the
 * number of bad elements (unwritten poison included); msg describes the first one and
 * the relative norm error. */
size_t gp_ref_comm_check_reduce(const void *got, gp_dtype_t t, gp_reduce_op_t op,
                                gp_ref_comm_data_t data, uint64_t seed, int nranks, size_t first,
                                size_t n, char *msg, size_t len);

/* Checks got[i] == input_rank[first + i] bit for bit, i < n. */
size_t gp_ref_comm_check_copy(const void *got, gp_dtype_t t, gp_reduce_op_t op,
                              gp_ref_comm_data_t data, uint64_t seed, int rank, size_t first,
                              size_t n, char *msg, size_t len);

/* NCCL and MPI accumulate f16/bf16/fp8 in the element type, not in f32: true widens the
 * reduction bounds to that (default false: the cpu engine's f32 accumulation). */
void gp_ref_comm_set_native_accumulation(bool native);

/* Fills n elements with a poison pattern (NaN for every floating type). */
void gp_ref_comm_poison(void *dst, gp_dtype_t t, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* GP_TOOL_REF_COMM_H */
