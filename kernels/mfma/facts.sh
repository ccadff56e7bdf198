#!/bin/sh
# facts.sh OUTDIR - the checks of the AMD kernels (kernels/mfma/*.cu) that need no GPU
# (docs/design/KERNELS.md "Static checks"), for every target in HIP_ARCHS:
#   1. hipcc -Rpass-analysis=kernel-resource-usage: every kernel has ScratchSize 0 and
#      no VGPR spills (SGPR spills go to VGPR lanes, not memory: reported, not fatal);
#   2. the code object, unbundled from the object file and disassembled with llvm-objdump,
#      has v_mfma instructions in every kernel;
#   3. every kernel is there, for every target: 28 (GEMM: 3; the probe: 1; attention
#      forward: 6; backward: 12, dq and dkv; kvcache: 6, f16/bf16 x head_dim 32, 64, 128),
#      each with its resource line and its v_mfma count.
# Writes OUTDIR/resources.txt (one line per kernel and target: VGPRs, AGPRs, scratch,
# occupancy, spills, LDS), OUTDIR/mfma.txt (v_mfma count per kernel and target) and the
# raw remarks and disassembly; exits non-zero when either fact is lost.
#
# Environment: HIPCC (default: hipcc on PATH), HIP_ARCHS (default "gfx90a gfx940"),
# LLVM_BIN (default /usr/lib/llvm-15/bin, where Debian's ROCm 5.2 keeps
# clang-offload-bundler and llvm-objdump).
set -u

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
OUT=$1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HIPCC=${HIPCC:-$(command -v hipcc)}
HIP_ARCHS=${HIP_ARCHS:-gfx90a gfx940}
LLVM_BIN=${LLVM_BIN:-/usr/lib/llvm-15/bin}
if [ -z "$HIPCC" ]; then
  echo "hip-kernel-check: hipcc not found" >&2
  exit 2
fi
for tool in clang-offload-bundler llvm-objdump; do
  if [ ! -x "$LLVM_BIN/$tool" ]; then
    echo "hip-kernel-check: $LLVM_BIN/$tool not found (set LLVM_BIN)" >&2
    exit 2
  fi
done
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
cd "$ROOT" || exit 2

status=0
: > "$OUT/resources.txt"
: > "$OUT/mfma.txt"
for src in kernels/mfma/*.cu; do
  base=$(basename "$src" .cu)
  for arch in $HIP_ARCHS; do
    obj=$OUT/$base.$arch.o
    if ! "$HIPCC" -x hip -std=c++17 -O3 -fPIC -fvisibility=hidden -DGP_BUILD_HIP -Iinclude -Isrc -I. \
        --offload-arch="$arch" -Rpass-analysis=kernel-resource-usage -c "$src" -o "$obj" \
        > "$OUT/$base.$arch.remarks" 2>&1; then
      echo "hip-kernel-check: $src does not build for $arch:" >&2
      grep -v 'warning: .*unused' "$OUT/$base.$arch.remarks" | tail -n 20 >&2
      status=1
      continue
    fi
    # 1. Resource usage, one line per kernel.
    awk -v arch="$arch" -v src="$src" '
      /remark: Function Name:/ { if (name != "") print line; sub(/.*Function Name: /, ""); sub(/ \[-R.*/, ""); name = $0; line = src " " arch " " name; next }
      /remark: +[A-Za-z]/ { s = $0; sub(/.*remark: +/, "", s); sub(/ \[-R.*/, "", s); line = line ", " s }
      END { if (name != "") print line }' "$OUT/$base.$arch.remarks" >> "$OUT/resources.txt"
    # 2. Disassembly of this target's code object, v_mfma per kernel.
    objcopy -O binary --only-section=.hip_fatbin "$obj" "$OUT/$base.$arch.fatbin" &&
      "$LLVM_BIN/clang-offload-bundler" -unbundle -type=o -input="$OUT/$base.$arch.fatbin" \
        -targets="hipv4-amdgcn-amd-amdhsa--$arch" -output="$OUT/$base.$arch.co" &&
      "$LLVM_BIN/llvm-objdump" -d "$OUT/$base.$arch.co" > "$OUT/$base.$arch.dis"
    if [ $? -ne 0 ]; then
      echo "hip-kernel-check: cannot disassemble $obj for $arch" >&2
      status=1
      continue
    fi
    awk -v arch="$arch" -v src="$src" '
      /^[0-9a-f]+ <[A-Za-z_][A-Za-z0-9_]*>:/ { f = $2; gsub(/[<>:]/, "", f); if (!(f in n)) { n[f] = 0; order[++k] = f } next }
      /v_mfma/ { if (f != "") n[f]++ }
      END { for (i = 1; i <= k; i++) print src " " arch " " order[i] " v_mfma=" n[order[i]] }' \
      "$OUT/$base.$arch.dis" >> "$OUT/mfma.txt"
  done
done

# 3. Every kernel, for every target, in both lists.
expected="gp__gemm_mfma_bf16 gp__gemm_mfma_f16 gp__gemm_mfma_f32 gp__probe_mfma"
for t in bf16 f16; do
  for d in 32 64 128; do
    expected="$expected gp__attention_fwd_mfma_${t}_d$d gp__attention_bwd_mfma_${t}_dq_d$d"
    expected="$expected gp__attention_bwd_mfma_${t}_dkv_d$d gp__attention_kvcache_fwd_mfma_${t}_d$d"
  done
done
missing=""
for arch in $HIP_ARCHS; do
  for k in $expected; do
    grep -q " $arch $k," "$OUT/resources.txt" && grep -q " $arch $k v_mfma=" "$OUT/mfma.txt" ||
      missing="$missing $k ($arch)"
  done
done
if [ -n "$missing" ]; then
  echo "hip-kernel-check: kernels missing from the remarks or the disassembly (of $(echo $expected | wc -w) per target):$missing" >&2
  status=1
fi

# Verdicts: every kernel without scratch or VGPR spills, every kernel with MFMA.
bad_res=$(grep -v -E 'ScratchSize \[bytes/lane\]: 0,.*VGPRs Spill: 0(,|$)' "$OUT/resources.txt")
kernels=$(wc -l < "$OUT/resources.txt")
if [ "$kernels" -eq 0 ]; then
  echo "hip-kernel-check: no kernel found in the remarks" >&2
  status=1
fi
if [ -n "$bad_res" ]; then
  echo "hip-kernel-check: kernels with scratch or VGPR spills:" >&2
  echo "$bad_res" >&2
  status=1
fi
no_mfma=$(grep ' v_mfma=0$' "$OUT/mfma.txt")
if [ -n "$no_mfma" ] || [ ! -s "$OUT/mfma.txt" ]; then
  echo "hip-kernel-check: kernels without v_mfma:" >&2
  echo "${no_mfma:-(no kernel disassembled)}" >&2
  status=1
fi
echo "== resource usage (hipcc -Rpass-analysis=kernel-resource-usage)"
cat "$OUT/resources.txt"
echo "== v_mfma instructions per kernel (llvm-objdump -d of each target's code object)"
cat "$OUT/mfma.txt"
if [ $status -eq 0 ]; then
  echo "hip-kernel-check: $kernels kernel builds without scratch or VGPR spills, all with v_mfma"
fi
exit $status
