/*
 * selftest_kvcache.c - gp_attention_fwd_kvcache (attention over a paged KV cache, with
 * appends and split-KV) against the float64 reference of ref/ref_attention.h, for
 * `gpuport selftest --kernels` (selftest_kernels.c). The call is built as
 * test/test_attention_kvcache.c builds it: the pages handed to the sequences in a
 * shuffled order (never the identity), unused block-table entries invalid, every slot no
 * sequence has written NaN (a read outside a sequence's tokens poisons its output), new
 * tokens appended through k_new / v_new, o and lse NaN-poisoned, the split workspace
 * filled with NaN bytes. Checked: every output element against its bound and the
 * relative norm against gp_ref_attention_rel_tol() (the reference is dense varlen
 * attention over each sequence's logical keys, gathered from the expected cache), every
 * lse value, and both caches after the append byte for byte (the new tokens in their
 * pages, every other byte, NaN poison included, unchanged).
 */
#include "ref_attention.h"
#include "selftest.h"

#include <stdlib.h>
#include <string.h>

/* A random permutation of n pages that is not the identity (when n > 1). */
static void shuffle_pages(int32_t *perm, int64_t n, gp_ref_rng_t *rng) {
  for (int64_t i = 0; i < n; i++) perm[i] = (int32_t)i;
  for (int64_t i = n - 1; i > 0; i--) {
    const int64_t j = (int64_t)(gp_ref_rng_next(rng) % (uint64_t)(i + 1));
    const int32_t t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  if (n > 1 && perm[0] == 0) {
    const int32_t t = perm[0];
    perm[0] = perm[1], perm[1] = t;
  }
}

bool st_kv_fwd(st_ctx_t *c, const st_kv_case_t *k) {
  const int64_t B = k->batch, row = k->hkv * k->d;
  const size_t es = gp_dtype_size(k->dtype);
  int64_t sk[ST_KV_MAXB], maxb = 0, pages_used = 0, total_k = 0, maxk = 1;
  for (int64_t b = 0; b < B; b++) {
    sk[b] = k->cached[b] + k->snew;
    const int64_t pb = (sk[b] + k->page - 1) / k->page;
    pages_used += pb;
    if (pb > maxb) maxb = pb;
    if (sk[b] > maxk) maxk = sk[b];
    total_k += sk[b];
  }
  maxb += 1;                              /* a spare column, never read */
  const int64_t nblocks = pages_used + 3; /* pages no sequence owns */
  const size_t ncache = (size_t)(nblocks * k->page * row), nq = (size_t)(B * k->sq * k->hq * k->d);
  const size_t nnew = (size_t)(B * k->snew * row), nlse = (size_t)(B * k->hq * k->sq);
  const size_t ntab = (size_t)(B * maxb), ndense = (size_t)(total_k * row);
  bool ok = false;
  int nsplit = 0;
  size_t ws_bytes = 0;
  int32_t *perm = malloc((size_t)nblocks * sizeof(int32_t)), *table = malloc(ntab * sizeof(int32_t));
  int32_t cached[ST_KV_MAXB], cu_q[ST_KV_MAXB + 1], cu_k[ST_KV_MAXB + 1];
  void *hkc = malloc(ncache * es), *hvc = malloc(ncache * es), *ekc = malloc(ncache * es);
  void *evc = malloc(ncache * es), *gkc = malloc(ncache * es), *gvc = malloc(ncache * es);
  void *hq = malloc(nq * es), *ho = malloc(nq * es), *hkn = malloc(nnew * es + 1), *hvn = malloc(nnew * es + 1);
  void *dk = malloc(ndense * es + 1), *dv = malloc(ndense * es + 1);
  float *hl = malloc(nlse * sizeof(float)), *hl_ref_layout = malloc(nlse * sizeof(float));
  double *oref = malloc(nq * sizeof(double)), *obound = malloc(nq * sizeof(double));
  double *lref = malloc(nlse * sizeof(double)), *lbound = malloc(nlse * sizeof(double));
  void *dkc = NULL, *dvc = NULL, *dq = NULL, *dout = NULL, *dl = NULL, *dkn = NULL, *dvn = NULL, *ws = NULL;
  void *dtab = NULL, *dcached = NULL;
  if (!perm || !table || !hkc || !hvc || !ekc || !evc || !gkc || !gvc || !hq || !ho || !hkn || !hvn || !dk ||
      !dv || !hl || !hl_ref_layout || !oref || !obound || !lref || !lbound) {
    st_fail(c, "host allocation failed");
    goto out;
  }
  /* the block table: each sequence's pages from a shuffled order, unused entries invalid */
  shuffle_pages(perm, nblocks, &c->rng);
  int64_t next = 0;
  for (int64_t b = 0; b < B; b++) {
    cached[b] = k->cached[b];
    for (int64_t j = 0; j < maxb; j++) table[b * maxb + j] = j < (sk[b] + k->page - 1) / k->page ? perm[next++] : -7;
  }
  /* the cache: NaN everywhere but the cached tokens */
  gp_ref_poison(hkc, k->dtype, ncache);
  gp_ref_poison(hvc, k->dtype, ncache);
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < k->cached[b]; t++) {
      const size_t at = (size_t)(((int64_t)table[b * maxb + t / k->page] * k->page + t % k->page) * row);
      gp_ref_fill((char *)hkc + at * es, k->dtype, (size_t)row, &c->rng, -1.0, 1.0);
      gp_ref_fill((char *)hvc + at * es, k->dtype, (size_t)row, &c->rng, -1.0, 1.0);
    }
  gp_ref_fill(hq, k->dtype, nq, &c->rng, -1.0, 1.0);
  gp_ref_fill(hkn, k->dtype, nnew, &c->rng, -1.0, 1.0);
  gp_ref_fill(hvn, k->dtype, nnew, &c->rng, -1.0, 1.0);
  gp_ref_poison(ho, k->dtype, nq);
  gp_ref_poison(hl, GP_F32, nlse);

  ST_TRY(c, tool_upload(&dkc, hkc, ncache * es));
  ST_TRY(c, tool_upload(&dvc, hvc, ncache * es));
  ST_TRY(c, tool_upload(&dq, hq, nq * es));
  ST_TRY(c, tool_upload(&dout, ho, nq * es));
  ST_TRY(c, tool_upload(&dl, hl, nlse * sizeof(float)));
  if (k->snew) {
    ST_TRY(c, tool_upload(&dkn, hkn, nnew * es));
    ST_TRY(c, tool_upload(&dvn, hvn, nnew * es));
  }
  ST_TRY(c, tool_upload(&dtab, table, ntab * sizeof(int32_t)));
  ST_TRY(c, tool_upload(&dcached, cached, (size_t)B * sizeof(int32_t)));

  gp_attention_kvcache_desc_t d;
  gp_attention_kvcache_desc_init(&d);
  d.dtype = k->dtype;
  d.batch = B, d.seqlen_q = k->sq, d.heads_q = k->hq, d.heads_kv = k->hkv, d.head_dim = k->d;
  d.q = dq, d.o = dout, d.lse = (float *)dl;
  d.k_cache = dkc, d.v_cache = dvc, d.num_blocks = nblocks, d.page_size = k->page;
  d.block_table = (const int32_t *)dtab, d.max_blocks_per_seq = maxb, d.cache_seqlens = (const int32_t *)dcached;
  d.k_new = dkn, d.v_new = dvn, d.seqlen_new = k->snew;
  d.causal = k->causal, d.window_left = k->wl, d.window_right = k->wr;
  d.num_splits = k->splits;
  ST_TRY(c, gp_attention_kvcache_workspace_size(&d, &nsplit, &ws_bytes));
  if (ws_bytes) {
    ST_TRY(c, gp_malloc(&ws, ws_bytes));
    ST_TRY(c, gp_memset(ws, 0xff, ws_bytes)); /* NaN partials unless written */
  }
  ST_TRY(c, gp_attention_fwd_kvcache(NULL, &d, ws, ws_bytes));
  ST_TRY(c, gp_device_synchronize());
  ST_TRY(c, gp_memcpy(ho, dout, nq * es));
  ST_TRY(c, gp_memcpy(hl, dl, nlse * sizeof(float)));
  ST_TRY(c, gp_memcpy(gkc, dkc, ncache * es));
  ST_TRY(c, gp_memcpy(gvc, dvc, ncache * es));

  /* the expected cache: the host cache with the new tokens in their pages */
  memcpy(ekc, hkc, ncache * es);
  memcpy(evc, hvc, ncache * es);
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < k->snew; t++) {
      const int64_t pos = k->cached[b] + t;
      const size_t at = (size_t)(((int64_t)table[b * maxb + pos / k->page] * k->page + pos % k->page) * row);
      const size_t from = (size_t)((b * k->snew + t) * row);
      memcpy((char *)ekc + at * es, (const char *)hkn + from * es, (size_t)row * es);
      memcpy((char *)evc + at * es, (const char *)hvn + from * es, (size_t)row * es);
    }
  /* the reference: dense varlen attention over each sequence's logical keys */
  cu_q[0] = cu_k[0] = 0;
  for (int64_t b = 0; b < B; b++) {
    for (int64_t t = 0; t < sk[b]; t++) {
      const size_t at = (size_t)(((int64_t)table[b * maxb + t / k->page] * k->page + t % k->page) * row);
      const size_t to = (size_t)((cu_k[b] + t) * row);
      memcpy((char *)dk + to * es, (const char *)ekc + at * es, (size_t)row * es);
      memcpy((char *)dv + to * es, (const char *)evc + at * es, (size_t)row * es);
    }
    cu_q[b + 1] = (int32_t)((b + 1) * k->sq);
    cu_k[b + 1] = cu_k[b] + (int32_t)sk[b];
  }
  gp_attention_desc_t rd;
  gp_attention_desc_init(&rd);
  rd.dtype = k->dtype;
  rd.batch = B, rd.seqlen_q = k->sq, rd.seqlen_k = maxk;
  rd.heads_q = k->hq, rd.heads_kv = k->hkv, rd.head_dim = k->d;
  rd.q = hq, rd.k = dk, rd.v = dv;
  rd.cu_seqlens_q = cu_q, rd.cu_seqlens_k = cu_k;
  rd.causal = k->causal, rd.window_left = k->wl, rd.window_right = k->wr;
  if (gp_ref_attention_fwd(&rd, cu_q, cu_k, oref, obound, lref, lbound)) {
    st_fail(c, "the reference rejected the case");
    goto out;
  }
  char what[192];
  snprintf(what, sizeof what, "%s b%lld sq%lld h%lld/%lld d%lld page%lld new%lld splits%d%s%s o",
           gp_dtype_name(k->dtype), (long long)B, (long long)k->sq, (long long)k->hq, (long long)k->hkv,
           (long long)k->d, (long long)k->page, (long long)k->snew, nsplit, k->causal ? " causal" : "",
           k->wl >= 0 || k->wr >= 0 ? " window" : "");
  /* o has the reference's packed layout [b * sq + i][h][d] */
  ok = st_compare(c, what, ho, k->dtype, oref, obound, 0.0, nq, gp_ref_attention_rel_tol(k->dtype));
  char o_note[sizeof c->summary];
  snprintf(o_note, sizeof o_note, "%s", c->summary);
  if (ok) { /* lse: ours [b][h][i], the reference's varlen [h][b * sq + i] */
    for (int64_t b = 0; b < B; b++)
      for (int64_t h = 0; h < k->hq; h++)
        for (int64_t i = 0; i < k->sq; i++)
          hl_ref_layout[(h * B + b) * k->sq + i] = hl[(b * k->hq + h) * k->sq + i];
    ok = st_compare(c, "lse", hl_ref_layout, GP_F32, lref, lbound, 0.0, nlse, 0.0);
  }
  /* the caches after the append; NaN poison compares unequal as a value, so bytes */
  if (ok) ok = st_compare_bytes(c, "k_cache after the append", gkc, ekc, ncache * es);
  if (ok) ok = st_compare_bytes(c, "v_cache after the append", gvc, evc, ncache * es);
  if (ok) st_note(c, "%s; lse ok; k_cache, v_cache bytes as expected", o_note);
out:
  gp_free(dkc), gp_free(dvc), gp_free(dq), gp_free(dout), gp_free(dl), gp_free(dkn), gp_free(dvn), gp_free(ws);
  gp_free(dtab), gp_free(dcached);
  free(perm), free(table), free(hkc), free(hvc), free(ekc), free(evc), free(gkc), free(gvc), free(hq), free(ho);
  free(hkn), free(hvn), free(dk), free(dv), free(hl), free(hl_ref_layout), free(oref), free(obound), free(lref);
  free(lbound);
  return ok && !c->failed;
}
