#!/bin/sh
# facts.sh DIR - static facts of the sm_80 kernels (kernels/sm80/gemm_sm80.cu,
# kernels/sm80/attention_fwd_sm80.cu, kernels/sm80/attention_bwd_sm80.cu,
# kernels/sm80/attention_kvcache_sm80.cu), checked without a GPU from what the cuda build leaves in DIR
# (build/cuda/kernels/sm80, see the Makefile): <file>.cu.o.ptxas, the ptxas report (-Xptxas -v),
# and keep-<file>/<file>.compute_80.ptx, the PTX shipped in the fat binary.
#
# Prints one line per kernel and target: registers, static and dynamic shared memory,
# stack frame, spill stores and loads. Fails (exit 1) when
#   - a kernel spills or has a stack frame, for sm_80 or sm_90;
#   - a kernel is missing (10 GEMM, 10 attention forward, 10 backward, 8 kvcache), or its PTX lacks
#     the instructions it is written with: mma.sync.aligned.m16n8k16, ldmatrix and
#     cp.async (the f32 GEMM: cp.async; the tf32 GEMM: mma.sync.aligned.m16n8k8 on tf32,
#     cvt.rna.tf32.f32 and cp.async);
#   - the tile shapes differ from the ones stated in kernels/sm80/sm80.h (so "no spills"
#     cannot be had by shrinking tiles): GEMM 128 x 128 x 32, 4 stages, 256 threads; f32
#     GEMM 128 x 128 x 8, 3 stages; tf32 GEMM 128 x 128 x 16, 4 stages; attention 128 query rows (8 warps) for head_dim <= 64
#     and 64 (4 warps) above, key tiles of 64 (32 for head_dim 256); backward key blocks
#     of 64 (32 for head_dim 256), query tiles of 32, 4 warps up to head_dim 64, else 8;
#     kvcache 64 rows (4 warps) and key tiles of 64, head_dim 32 to 128.
# Environment: CC (default cc), to read the geometry macros.
set -u
DIR=${1:-build/cuda/kernels/sm80}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CC=${CC:-cc}
status=0
fail() {
  echo "FAIL: $*"
  status=1
}

FILES="gemm_sm80 attention_fwd_sm80 attention_bwd_sm80 attention_kvcache_sm80"
for f in $FILES; do
  if [ ! -f "$DIR/$f.cu.o.ptxas" ] || [ ! -f "$DIR/keep-$f/$f.compute_80.ptx" ]; then
    echo "sm80-facts: $DIR/$f.cu.o.ptxas or its PTX is missing (build with BACKEND=cuda first)" >&2
    exit 2
  fi
done

# ---- geometry, as the kernels and the host code see it ---------------------------------
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/geo.c" <<'EOF'
#include <stdio.h>
#include "kernels/sm80/sm80.h"
int main(void) {
  static const int dims[] = {32, 64, 96, 128, 256};
  static const char *const ops[] = {"nn", "nt", "tn", "tt"};
  printf("shape gemm %d %d %d %d %d\n", GP__SM80_GEMM_BM, GP__SM80_GEMM_BN, GP__SM80_GEMM_BK,
         GP__SM80_GEMM_STAGES, GP__SM80_GEMM_THREADS);
  printf("shape sgemm %d %d %d %d %d\n", GP__SM80_SGEMM_BM, GP__SM80_SGEMM_BN, GP__SM80_SGEMM_BK,
         GP__SM80_SGEMM_STAGES, GP__SM80_SGEMM_THREADS);
  printf("shape tgemm %d %d %d %d %d\n", GP__SM80_GEMM_BM, GP__SM80_GEMM_BN, GP__SM80_TGEMM_BK,
         GP__SM80_TGEMM_STAGES, GP__SM80_GEMM_THREADS);
  for (int i = 0; i < 5; i++)
    printf("shape attn%d %d %d %d\n", dims[i], GP__SM80_ATTN_BM(dims[i]), GP__SM80_ATTN_BN(dims[i]),
           GP__SM80_ATTN_THREADS(dims[i]));
  for (int i = 0; i < 4; i++)
    printf("shape kv%d %d %d %d\n", dims[i], GP__SM80_KV_BM(dims[i]), GP__SM80_KV_BN(dims[i]),
           GP__SM80_KV_THREADS(dims[i]));
  for (int i = 0; i < 5; i++)
    printf("shape bwd%d %d %d %d\n", dims[i], GP__SM80_BWD_BN(dims[i]), GP__SM80_BWD_BMQ(dims[i]),
           GP__SM80_BWD_THREADS(dims[i]));
  for (int t = 0; t < 2; t++)
    for (int o = 0; o < 4; o++)
      printf("dyn gp__gemm_sm80_%s_%s %d\n", t ? "bf16" : "f16", ops[o],
             GP__SM80_GEMM_SMEM(o / 2, o % 2));
  printf("dyn gp__gemm_sm80_f32 %d\n", GP__SM80_SGEMM_SMEM);
  printf("dyn gp__gemm_sm80_tf32 %d\n", GP__SM80_TGEMM_SMEM(1, 0)); /* the largest pair */
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < 5; i++)
      printf("dyn gp__attention_fwd_sm80_%s_d%d %d\n", t ? "bf16" : "f16", dims[i],
             GP__SM80_ATTN_SMEM(dims[i]));
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < 5; i++)
      printf("dyn gp__attention_bwd_sm80_%s_d%d %d\n", t ? "bf16" : "f16", dims[i],
             GP__SM80_BWD_SMEM(dims[i]));
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < 4; i++)
      printf("dyn gp__attention_kvcache_fwd_sm80_%s_d%d %d\n", t ? "bf16" : "f16", dims[i],
             GP__SM80_KV_SMEM(dims[i]));
  return 0;
}
EOF
if ! $CC -I"$ROOT/include" -I"$ROOT/src" -I"$ROOT" "$tmp/geo.c" -o "$tmp/geo" || ! "$tmp/geo" > "$tmp/geo.txt"; then
  echo "sm80-facts: cannot build the geometry probe with $CC" >&2
  exit 2
fi
want_shape() { # name expected-fields
  got=$(awk -v n="$1" '$1 == "shape" && $2 == n { $1 = ""; $2 = ""; sub(/^  /, ""); print }' "$tmp/geo.txt")
  [ "$got" = "$2" ] || fail "tile shape $1 is '$got', stated '$2'"
}
want_shape gemm "128 128 32 4 256"
want_shape sgemm "128 128 8 3 256"
want_shape tgemm "128 128 16 4 256"
want_shape attn32 "128 64 256"
want_shape attn64 "128 64 256"
want_shape attn96 "64 64 128"
want_shape attn128 "64 64 128"
want_shape attn256 "64 32 128"
want_shape bwd32 "64 32 128"
want_shape bwd64 "64 32 128"
want_shape bwd96 "64 32 256"
want_shape bwd128 "64 32 256"
want_shape bwd256 "32 32 256"
want_shape kv32 "64 64 128"
want_shape kv64 "64 64 128"
want_shape kv96 "64 64 128"
want_shape kv128 "64 64 128"

# ---- resources per kernel and target, from the ptxas reports ---------------------------
for f in $FILES; do cat "$DIR/$f.cu.o.ptxas"; done | awk -v q="'" '
  /Compiling entry function/ { split($0, part, q); k = part[2]; a = part[4]; entry = 1; next }
  /Function properties for/ { if (!entry) k = "" ; next }
  /bytes stack frame/ { if (k != "") { st[k, a] = $1; ss[k, a] = $5; sl[k, a] = $9 } ; next }
  /Used [0-9]+ registers/ {
    if (k == "") next
    r = $0; sub(/.*Used /, "", r); sub(/ registers.*/, "", r)
    sm = 0; if (match($0, /[0-9]+ bytes smem/)) { sm = substr($0, RSTART, RLENGTH); sub(/ .*/, "", sm) }
    print k, a, r, sm, st[k, a], ss[k, a], sl[k, a]
    k = ""; entry = 0
  }' > "$tmp/res.txt"

printf '%-36s %-6s %5s %8s %9s %6s %7s %7s\n' kernel target regs smem_st smem_dyn stack spill_s spill_l
while read -r k a r sm st ss sl; do
  dyn=$(awk -v n="$k" '$1 == "dyn" && $2 == n { print $3 }' "$tmp/geo.txt")
  printf '%-36s %-6s %5s %8s %9s %6s %7s %7s\n' "$k" "$a" "$r" "$sm" "${dyn:-?}" "$st" "$ss" "$sl"
  [ "$st" = 0 ] && [ "$ss" = 0 ] && [ "$sl" = 0 ] || fail "$k ($a) has a stack frame or spills"
  [ -n "$dyn" ] || fail "$k ($a): no dynamic shared memory size in kernels/sm80/sm80.h"
done < "$tmp/res.txt"
for a in sm_80 sm_90; do
  n=$(awk -v a="$a" '$2 == a' "$tmp/res.txt" | wc -l)
  [ "$n" -eq 38 ] || fail "$n kernels compiled for $a, expected 38 (10 GEMM, 20 attention, 8 kvcache)"
done

# ---- instructions per kernel, from the compute_80 PTX ----------------------------------
for f in $FILES; do cat "$DIR/keep-$f/$f.compute_80.ptx"; done | awk '
  /^\.visible \.entry/ || /^\.entry/ { if (k != "") print k, m, l, c, t, v; k = $0; sub(/.*entry /, "", k); sub(/\(.*/, "", k); m = l = c = t = v = 0; next }
  /mma\.sync\.aligned\.m16n8k16/ { m++ }
  /ldmatrix\.sync\.aligned/ { l++ }
  /cp\.async\.(ca|cg)\.shared\.global/ { c++ }
  /mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32/ { t++ }
  /cvt\.rna\.tf32\.f32/ { v++ }
  END { if (k != "") print k, m, l, c, t, v }' > "$tmp/ptx.txt"
echo
printf '%-36s %10s %9s %9s %9s %9s   (compute_80 PTX)\n' kernel mma.sync ldmatrix cp.async mma.tf32 cvt.tf32
while read -r k m l c t v; do
  printf '%-36s %10s %9s %9s %9s %9s\n' "$k" "$m" "$l" "$c" "$t" "$v"
  case $k in
    gp__gemm_sm80_f32) [ "$c" -gt 0 ] || fail "$k: no cp.async in its PTX" ;;
    gp__gemm_sm80_tf32)
      [ "$t" -gt 0 ] && [ "$v" -gt 0 ] && [ "$c" -gt 0 ] ||
        fail "$k: its PTX lacks mma.sync.aligned.m16n8k8 (tf32), cvt.rna.tf32.f32 or cp.async" ;;
    gp__gemm_sm80_*|gp__attention_fwd_sm80_*|gp__attention_bwd_sm80_*|gp__attention_kvcache_fwd_sm80_*)
      [ "$m" -gt 0 ] && [ "$l" -gt 0 ] && [ "$c" -gt 0 ] ||
        fail "$k: its PTX lacks mma.sync.aligned.m16n8k16, ldmatrix or cp.async" ;;
  esac
done < "$tmp/ptx.txt"
n=$(wc -l < "$tmp/ptx.txt")
[ "$n" -eq 38 ] || fail "$n kernels in the compute_80 PTX, expected 38"

if [ $status -eq 0 ]; then echo "sm80-facts: all facts hold"; fi
exit $status
