#!/bin/sh
# gpu-check.sh OUTDIR - the checks that need an NVIDIA GPU, in one run.
#
# For a machine with a GPU and the CUDA toolkit: builds the cuda library and tool (no
# test suites), then runs
#   gpuport-cuda info --json, selftest, bench gemm|attention|memcpy|launch --json
#   (gemm beside cuBLAS, also f32 with --tf32),
#   bench attention --backward --json, bench allreduce --check --json (NCCL: the
#   system's, or the Python environment's), scripts/attention-anchor.py (attention
#   beside PyTorch's scaled_dot_product_attention, flash backend)
#   and, when the all-MiniLM-L6-v2 folder is there (MINILM_MODEL_DIR, default
#   models/all-MiniLM-L6-v2: `make model`), embed --json and bench embed --json,
#   and, where the Check library is installed, the sm_80 lane probe (test_nv_mma);
#   on a GPU of compute capability 9.0, the gated sm_90a path (GP_ENABLE_SM90A=1):
#   selftest, the sm_90a lane probe (test_nv_wgmma: wgmma, TMA, mbarrier against the
#   layouts the emulation follows), the sm_90a GEMM shapes of test_gemm against the
#   float64 reference and beside the sm_80 kernels (test_gemm's sm90a case), the sm_90a
#   attention forward on test_attention's cases (its sm90a case), bench gemm at 4096^3
#   and 8192^3 bf16 and bench attention (head_dim 128, seqlen 1k-16k, bf16) with the
#   gate on and off;
# writes each output to OUTDIR (<step>.json or <step>.txt, stderr beside it), the build
# log to OUTDIR/build.txt, the sm_80 kernels' static facts to OUTDIR/sm80-facts.txt, SASS
# instruction counts (HMMA, HGMMA) to OUTDIR/sass.txt when cuobjdump exists, and one line
# per step to OUTDIR/summary.txt.
# Exit status: 0 when the build and every step succeeded.
#
# Environment: JOBS (parallel make jobs, default the core count), STEP_TIMEOUT
# (seconds per step, default 300), MAKE_ARGS (extra make arguments, e.g. CUDA_GENCODE=...).
set -u

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
OUT=$1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
cd "$ROOT" || exit 2

JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
STEP_TIMEOUT=${STEP_TIMEOUT:-300}
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
status=0

note() { echo "$*" | tee -a "$SUMMARY"; }

# The version the Makefile reads, from the one header.
field() { sed -n "s/^#define GP_VERSION_$1 \([0-9]*\).*/\1/p" include/gpuport/version.h; }
VERSION=$(field MAJOR).$(field MINOR).$(field PATCH)
LIB=lib/libgpuport-cuda.so.$VERSION
TOOL=bin/gpuport-cuda

# ---- environment -----------------------------------------------------------------
{
  echo "gpuport $VERSION at $ROOT"
  date -u '+%Y-%m-%dT%H:%M:%SZ'
  uname -a
  command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 2
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
} > "$OUT/environment.txt" 2>&1
note "environment: $OUT/environment.txt"

# ---- build: the library and the tool, no test suites ----------------------------------
start=$(date +%s)
# shellcheck disable=SC2086
make -j"$JOBS" BACKEND=cuda ${MAKE_ARGS:-} "$LIB" "$TOOL" > "$OUT/build.txt" 2>&1
rc=$?
note "build: rc=$rc $(($(date +%s) - start))s ($(grep -c -i 'warning' "$OUT/build.txt") warning lines)"
if [ $rc -ne 0 ]; then
  tail -n 40 "$OUT/build.txt"
  note "result: FAIL (build)"
  exit 1
fi

# ---- the tool's checks ------------------------------------------------------------------
# step NAME EXT ARGS...: runs the tool with ARGS, stdout to OUT/NAME.EXT.
step() {
  name=$1 ext=$2
  shift 2
  start=$(date +%s)
  timeout "$STEP_TIMEOUT" "$TOOL" "$@" > "$OUT/$name.$ext" 2> "$OUT/$name.stderr.txt"
  rc=$?
  [ -s "$OUT/$name.stderr.txt" ] || rm -f "$OUT/$name.stderr.txt"
  extra=""
  [ $rc -eq 124 ] && extra=" (timed out after ${STEP_TIMEOUT}s)"
  note "$name: rc=$rc $(($(date +%s) - start))s$extra -> $OUT/$name.$ext"
  [ $rc -eq 0 ] || status=1
}

# Collectives: NCCL comes from the system, or else from the Python environment's
# nvidia-nccl-cu12/cu13 package (docs/design/COMM.md "NCCL and RCCL"); one GPU means
# one rank.
if [ -z "${GP_NCCL_LIBRARY:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2 '; then
  nccl=$(python3 -c 'import os, nvidia.nccl as m; print(os.path.join(list(m.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  if [ -n "$nccl" ] && [ -f "$nccl" ]; then GP_NCCL_LIBRARY=$nccl; export GP_NCCL_LIBRARY; fi
fi
note "nccl: ${GP_NCCL_LIBRARY:-libnccl.so.2 from the loader path}"

step info json info --json
step selftest txt selftest
step bench-gemm json bench gemm --json
step bench-gemm-tf32 json bench gemm --tf32 --m 8192 --n 8192 --k 8192 --json
step bench-attention json bench attention --json
step bench-attention-bwd json bench attention --backward --json
step bench-memcpy json bench memcpy --json
step bench-launch json bench launch --json
step bench-allreduce json bench allreduce --check --json

# Attention beside PyTorch's SDPA (flash backend), FlashAttention-2's sweep, when a
# PyTorch with CUDA is installed (else gpuport's column alone).
start=$(date +%s)
timeout "$((STEP_TIMEOUT * 2))" python3 scripts/attention-anchor.py "$OUT" "$TOOL" \
  > "$OUT/attention-anchor.txt" 2>&1
rc=$?
note "attention-anchor: rc=$rc $(($(date +%s) - start))s -> $OUT/attention-anchor.md"
[ $rc -eq 0 ] || status=1

# all-MiniLM-L6-v2 (examples/minilm), when the model was fetched or brought along.
MODEL=${MINILM_MODEL_DIR:-models/all-MiniLM-L6-v2}
if [ -f "$MODEL/model.safetensors" ] && [ -f "$MODEL/vocab.txt" ]; then
  export MINILM_MODEL_DIR="$MODEL"
  step embed json embed --json "A man is eating food." "A man is eating a piece of bread."
  step bench-embed json bench embed --json
else
  note "embed: skipped, no $MODEL/model.safetensors (make model fetches it)"
fi

# ---- the sm_80 lane probe: the emulation's fragment tables against the hardware ---------
# test/test_nv_mma.c runs mma.sync, ldmatrix and cp.async on small integers and checks
# every lane's registers against the PTX ISA tables the CPU emulation follows. It is a
# Check suite: it runs where the Check library is installed.
if pkg-config --exists check 2>/dev/null; then
  start=$(date +%s)
  # shellcheck disable=SC2086
  if make -j"$JOBS" BACKEND=cuda ${MAKE_ARGS:-} build/cuda/test/test_nv_mma >> "$OUT/build.txt" 2>&1; then
    CK_FORK=no timeout "$STEP_TIMEOUT" build/cuda/test/test_nv_mma > "$OUT/lane-probe.txt" 2>&1
    rc=$?
  else
    rc=2
  fi
  note "lane-probe: rc=$rc $(($(date +%s) - start))s -> $OUT/lane-probe.txt"
  [ $rc -eq 0 ] || status=1
else
  note "lane-probe: skipped, no Check library (pkg-config check)"
fi

# ---- the gated sm_90a path (compute capability 9.0 only) ---------------------------------
# GP_ENABLE_SM90A=1 lets the library choose the sm_90a kernels; this run is what
# docs/PERFORMANCE.md records before the gate may go.
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1)
if [ "$cc" = "9.0" ]; then
  export GP_ENABLE_SM90A=1
  step selftest-sm90a txt selftest
  for n in 4096 8192; do
    GP_ENABLE_SM90A=1 && step "bench-gemm-sm90a-$n" json bench gemm --m $n --n $n --k $n --dtype bf16 --json
    GP_ENABLE_SM90A=0 && step "bench-gemm-sm80-$n" json bench gemm --m $n --n $n --k $n --dtype bf16 --json
  done
  for sl in 1024 4096 16384; do
    b=$((16384 / sl))
    for c in 0 1; do
      args="bench attention --batch $b --seqlen $sl --heads 16 --kv-heads 16 --head-dim 128 --causal $c --dtype bf16 --json"
      GP_ENABLE_SM90A=1 && step "bench-attention-sm90a-$sl-c$c" json $args
      GP_ENABLE_SM90A=0 && step "bench-attention-sm80-$sl-c$c" json $args
    done
  done
  GP_ENABLE_SM90A=1
  if pkg-config --exists check 2>/dev/null; then
    for t in test_nv_wgmma test_gemm test_attention; do
      start=$(date +%s)
      # shellcheck disable=SC2086
      if make -j"$JOBS" BACKEND=cuda ${MAKE_ARGS:-} build/cuda/test/$t >> "$OUT/build.txt" 2>&1; then
        if [ $t != test_nv_wgmma ]; then
          CK_FORK=no CK_RUN_CASE=sm90a timeout "$STEP_TIMEOUT" build/cuda/test/$t > "$OUT/sm90a-$t.txt" 2>&1
        else
          CK_FORK=no timeout "$STEP_TIMEOUT" build/cuda/test/$t > "$OUT/sm90a-$t.txt" 2>&1
        fi
        rc=$?
      else
        rc=2
      fi
      note "sm90a-$t: rc=$rc $(($(date +%s) - start))s -> $OUT/sm90a-$t.txt"
      [ $rc -eq 0 ] || status=1
    done
  fi
  unset GP_ENABLE_SM90A
else
  note "sm90a: skipped, compute capability '${cc:-unknown}' is not 9.0"
fi

# ---- static facts of the sm_80 kernels (from the build above) ---------------------------
if sh kernels/sm80/facts.sh build/cuda/kernels/sm80 > "$OUT/sm80-facts.txt" 2>&1; then
  note "sm80-facts: pass -> $OUT/sm80-facts.txt"
else
  note "sm80-facts: FAIL -> $OUT/sm80-facts.txt"
  status=1
fi

if sh kernels/sm90a/facts.sh build/cuda/kernels/sm90a > "$OUT/sm90-facts.txt" 2>&1; then
  note "sm90-facts: pass -> $OUT/sm90-facts.txt"
else
  note "sm90-facts: FAIL -> $OUT/sm90-facts.txt"
  status=1
fi

# ---- SASS: did the tensor-core paths compile to tensor-core instructions? --------------
if command -v cuobjdump >/dev/null 2>&1; then
  sass=$OUT/sass.txt
  if cuobjdump -sass "$LIB" > "$OUT/sass-full.txt" 2>&1; then
    {
      for op in HMMA HGMMA IMMA LDSM UTMALDG; do
        echo "$op: $(grep -c "$op" "$OUT/sass-full.txt")"
      done
      echo "per function (HMMA/HGMMA count):"
      awk '/Function :/ { f = $3 } /HMMA|HGMMA/ { n[f]++ } END { for (f in n) print "  " f ": " n[f] }' \
        "$OUT/sass-full.txt" | sort
    } > "$sass"
    command -v gzip >/dev/null 2>&1 && gzip -f "$OUT/sass-full.txt"
    note "sass: $(head -n 2 "$sass" | tr '\n' ' ')-> $sass"
  else
    note "sass: cuobjdump -sass failed (see $OUT/sass-full.txt)"
  fi
else
  note "sass: skipped, no cuobjdump"
fi

if [ $status -eq 0 ]; then note "result: PASS"; else note "result: FAIL"; fi
exit $status
