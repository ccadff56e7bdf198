#!/bin/sh
# facts.sh DIR - static facts of the sm_90a kernels (kernels/sm90a/gemm_sm90a.cu,
# kernels/sm90a/attention_fwd_sm90a.cu), checked
# without a GPU from what the cuda build leaves in DIR (build/cuda/kernels/sm90a, see the
# Makefile): <file>.cu.o.ptxas, the ptxas report (-Xptxas -v), and
# keep-<file>/<file>.ptx, the PTX behind the sm_90a code of the fat binary (named
# <file>.compute_90a.ptx when the file is built for several targets).
#
# Prints one line per kernel: registers, dynamic shared memory, stack frame, spill
# stores and loads, and its counts of wgmma.mma_async, cp.async.bulk.tensor, mbarrier
# waits and setmaxnreg. Fails (exit 1) when
#   - a kernel spills or has a stack frame;
#   - ptxas had to inject warpgroup.arrive / warpgroup.wait around a wgmma (its
#     accumulators touched while in flight, or a wgmma behind a divergent branch: the
#     wgmmas would serialize; remarks C7514, C7517, C7519, C7520);
#   - a kernel is missing (8 GEMM: f16 and bf16 x nn, nt, tn, tt; 4 attention forward:
#     f16 and bf16 x head_dim 64, 128), or its PTX lacks wgmma.mma_async (m64n128k16 in
#     the GEMM), cp.async.bulk.tensor, mbarrier.try_wait or setmaxnreg;
#   - the tile shapes differ from the ones stated in kernels/sm90a/sm90a.h: GEMM 128 x 128
#     x 64, 4 stages, 384 threads (one producer and two consumer warpgroups); attention
#     128 query rows, 128 keys per step (64 at head_dim 128), 2 stages, 384 threads.
# Environment: CC (default cc), to read the geometry macros.
set -u
DIR=${1:-build/cuda/kernels/sm90a}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CC=${CC:-cc}
status=0
fail() {
  echo "FAIL: $*"
  status=1
}

FILES="gemm_sm90a attention_fwd_sm90a"
ptx_of() { # the sm_90a PTX of file $1
  if [ -f "$DIR/keep-$1/$1.compute_90a.ptx" ]; then echo "$DIR/keep-$1/$1.compute_90a.ptx"; else echo "$DIR/keep-$1/$1.ptx"; fi
}
for f in $FILES; do
  if [ ! -f "$DIR/$f.cu.o.ptxas" ] || [ ! -f "$(ptx_of "$f")" ]; then
    echo "sm90-facts: $DIR/$f.cu.o.ptxas or its PTX is missing (build with BACKEND=cuda first)" >&2
    exit 2
  fi
done

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/geo.c" <<'EOF2'
#include <stdio.h>
#include "kernels/sm90a/sm90a.h"
int main(void) {
  printf("shape gemm %d %d %d %d %d\n", GP__SM90_GEMM_BM, GP__SM90_GEMM_BN, GP__SM90_GEMM_BK,
         GP__SM90_GEMM_STAGES, GP__SM90_GEMM_THREADS);
  printf("smem gemm %d\n", GP__SM90_GEMM_SMEM);
  printf("shape attn %d %d %d %d %d\n", GP__SM90_ATTN_BM, GP__SM90_ATTN_BN(64), GP__SM90_ATTN_BN(128),
         GP__SM90_ATTN_STAGES, GP__SM90_ATTN_THREADS);
  printf("smem attn64 %d\nsmem attn128 %d\n", GP__SM90_ATTN_SMEM(64), GP__SM90_ATTN_SMEM(128));
  return 0;
}
EOF2
if ! $CC -I"$ROOT/include" -I"$ROOT/src" -I"$ROOT" "$tmp/geo.c" -o "$tmp/geo" || ! "$tmp/geo" > "$tmp/geo.txt"; then
  echo "sm90-facts: cannot build the geometry probe with $CC" >&2
  exit 2
fi
got=$(awk '$1 == "shape" && $2 == "gemm" { print $3, $4, $5, $6, $7 }' "$tmp/geo.txt")
[ "$got" = "128 128 64 4 384" ] || fail "GEMM tile shape is '$got', stated '128 128 64 4 384'"
got=$(awk '$1 == "shape" && $2 == "attn" { print $3, $4, $5, $6, $7 }' "$tmp/geo.txt")
[ "$got" = "128 128 64 2 384" ] || fail "attention tile shape is '$got', stated '128 128 64 2 384'"
smem_of() { # the stated dynamic shared memory of kernel $1
  case $1 in
    gp__gemm_sm90a_*) awk '$1 == "smem" && $2 == "gemm" { print $3 }' "$tmp/geo.txt" ;;
    *_d64) awk '$1 == "smem" && $2 == "attn64" { print $3 }' "$tmp/geo.txt" ;;
    *_d128) awk '$1 == "smem" && $2 == "attn128" { print $3 }' "$tmp/geo.txt" ;;
  esac
}

# ---- resources per kernel, from the ptxas reports ---------------------------------------
for f in $FILES; do cat "$DIR/$f.cu.o.ptxas"; done > "$tmp/ptxas.txt"
if grep -E 'C75(17|19|20)|is injected|are serialized' "$tmp/ptxas.txt" > "$tmp/inject.txt"; then
  fail "ptxas injected warpgroup synchronization: $(head -1 "$tmp/inject.txt")"
fi
awk -v q="'" '
  /Compiling entry function/ { split($0, part, q); k = part[2]; a = part[4]; entry = 1; next }
  /Function properties for/ { if (!entry) k = "" ; next }
  /bytes stack frame/ { if (k != "") { st[k] = $1; ss[k] = $5; sl[k] = $9 } ; next }
  /Used [0-9]+ registers/ {
    if (k == "") next
    r = $0; sub(/.*Used /, "", r); sub(/ registers.*/, "", r)
    print k, a, r, st[k], ss[k], sl[k]
    k = ""; entry = 0
  }' "$tmp/ptxas.txt" > "$tmp/res.txt"

# ---- instructions per kernel, from the compute_90a PTX -----------------------------------
for f in $FILES; do cat "$(ptx_of "$f")"; done | awk '
  /^\.visible \.entry/ || /^\.entry/ { if (k != "") print k, w, t, b, s, w128; k = $0; sub(/.*entry /, "", k); sub(/\(.*/, "", k); w = t = b = s = w128 = 0; next }
  /wgmma\.mma_async\.sync\.aligned\.m64n/ { w++; if ($0 ~ /m64n128k16/) w128++ }
  /cp\.async\.bulk\.tensor/ { t++ }
  /mbarrier\.try_wait/ { b++ }
  /setmaxnreg/ { s++ }
  END { if (k != "") print k, w, t, b, s, w128 }' > "$tmp/ptx.txt"

printf '%-34s %-7s %5s %9s %6s %7s %7s %6s %6s %7s %6s\n' kernel target regs smem_dyn stack spill_s spill_l wgmma tma mbar_w maxnreg
n=0
while read -r k a r st ss sl; do
  n=$((n + 1))
  set -- $(awk -v n="$k" '$1 == n { print $2, $3, $4, $5, $6 }' "$tmp/ptx.txt")
  w=${1:-0} t=${2:-0} b=${3:-0} s=${4:-0} w128=${5:-0}
  dyn=$(smem_of "$k")
  printf '%-34s %-7s %5s %9s %6s %7s %7s %6s %6s %7s %6s\n' "$k" "$a" "$r" "$dyn" "$st" "$ss" "$sl" "$w" "$t" "$b" "$s"
  [ "$a" = sm_90a ] || fail "$k compiled for $a, expected sm_90a only"
  [ "$st" = 0 ] && [ "$ss" = 0 ] && [ "$sl" = 0 ] || fail "$k ($a) has a stack frame or spills"
  [ "$w" -gt 0 ] && [ "$t" -gt 0 ] && [ "$b" -gt 0 ] && [ "$s" -gt 0 ] ||
    fail "$k: its PTX lacks wgmma.mma_async, cp.async.bulk.tensor, mbarrier.try_wait or setmaxnreg"
  case $k in gp__gemm_sm90a_*) [ "$w128" -gt 0 ] || fail "$k: no wgmma m64n128k16 in its PTX" ;; esac
done < "$tmp/res.txt"
[ "$n" -eq 12 ] || fail "$n sm_90a kernels in the ptxas report, expected 12 (8 GEMM, 4 attention)"
np=$(grep -c '^gp__gemm_sm90a_' "$tmp/ptx.txt")
[ "$np" -eq 8 ] || fail "$np sm_90a GEMM kernels in the PTX, expected 8"
np=$(grep -c '^gp__attention_fwd_sm90a_' "$tmp/ptx.txt")
[ "$np" -eq 4 ] || fail "$np sm_90a attention kernels in the PTX, expected 4"

if [ $status -eq 0 ]; then echo "sm90-facts: all facts hold"; fi
exit $status
