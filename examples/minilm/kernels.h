/*
 * kernels.h - geometry shared by the MiniLM dialect kernels (kernels.cu) and the host code
 * that launches them (model.c).
 */
#ifndef MINILM_KERNELS_H
#define MINILM_KERNELS_H

#define MINILM_THREADS 128 /* threads per block of every kernel (a multiple of 64) */
#define MINILM_LN_PER 8    /* columns a LayerNorm thread holds: hidden <= 8 x 128 */

#endif /* MINILM_KERNELS_H */
