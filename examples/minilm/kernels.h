/*
 * kernels.h - geometry shared by the MiniLM dialect kernels (kernels.cu) and the host code
 * that launches them (model.c).
 */
#ifndef MINILM_KERNELS_H
#define MINILM_KERNELS_H

#define MINILM_THREADS 128 /* threads per block of every kernel (a multiple of 64) */
#define MINILM_LN_PER 16   /* columns a LayerNorm lane holds: hidden <= 16 x 32 */

#endif /* MINILM_KERNELS_H */
