#!/usr/bin/env bash
# gpu-check.sh - the checks and benchmarks that need a GPU, in two halves:
#
#   gpu-check.sh prepare BUNDLE [--backend cuda|cpu] [--model DIR] [--jobs N]
#       On a machine with the toolchain (nvcc for cuda; no GPU needed): builds the library
#       and the `gpuport` program and copies them, with the shared libraries a bare
#       machine may lack (cuda runtime, cJSON, utf8proc) and these scripts, into the
#       folder BUNDLE (a few MiB, debug info stripped). The program finds its library
#       through $ORIGIN, so the folder runs wherever it lands. The all-MiniLM-L6-v2 files
#       (DIR, default models/all-MiniLM-L6-v2) are included only when they total under
#       24 MiB, else `bench embed` is skipped and the manifest says why.
#       Prints the bundle's files and size. --backend cpu makes a bundle of the cpu
#       backend, whose emulation modes stand in for the hardware (the test of this script).
#
#   gpu-check.sh run BUNDLE OUTDIR [--small] [--only STEP,...]
#       On the machine that has the GPU, no compiler needed: runs the steps below in this
#       order, each under its own time limit (seconds), the whole under 8 minutes. A step
#       that fails or times out is recorded and the next one runs. Writes to OUTDIR three
#       files: summary.json (every step: status, seconds, limit, key figures, the kernels
#       that ran), summary.md (the same as a table) and gpu-check-raw.tar.gz (every
#       step's raw output, each file capped at 2 MiB). --small: tiny shapes (seconds, not
#       minutes; for CI on the cpu bundle). --only: just these steps (a second try).
#       Exit status 0 when no step failed or timed out. GPU_CHECK_LIMITS="step=seconds
#       ..." sets a step's limit (within the budget).
#
#   step            limit  what
#   info               15  gpuport info --json; SASS counts (HGMMA, HMMA, UTMALDG) by cuobjdump
#   hardware           30  gpuport selftest --hardware (lane probes: sm_80, sm_90a, MFMA)
#   kernels            40  gpuport selftest --kernels, GP_ENABLE_SM90A=0
#   kernels-sm90a      45  gpuport selftest --kernels, GP_ENABLE_SM90A=1 (sm_90a beside
#                          sm_80 on the same inputs; compute capability 9.0 only)
#   memcheck           60  compute-sanitizer --tool memcheck, selftest --kernels --quick
#   racecheck          60  compute-sanitizer --tool racecheck, selftest --kernels --quick
#   bench-gemm         45  bench gemm beside cuBLAS (4096^3, 8192^3 bf16, the Llama-3-8B
#                          projections), gate off, then on (9.0)
#   bench-attention   100  scripts/attention-anchor.py: bench attention beside PyTorch's
#                          SDPA flash backend (head_dim 64, 128; seqlen 1k-16k; causal and
#                          not; forward and backward; the forward also with the gate on)
#   bench-paged        40  bench attention --paged: decode and a 16-token prefill over a
#                          paged KV cache (page 16, 32/8 heads, d128, bf16) at batch 1-64,
#                          context 2k-32k, beside dense attention on the same K/V; K/V
#                          GB/s against the data sheet's bandwidth (H100, H200) or a copy;
#                          scripts/paged-anchor.py: PyTorch's SDPA on dense K/V, each row
#   bench-launch       15  bench launch (plain launches, graph replay)
#   bench-embed        15  bench embed (all-MiniLM-L6-v2, when the bundle has it)
#   total             465  (the script stops starting steps at 465 s)
set -u

SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
STEPS="info hardware kernels kernels-sm90a memcheck racecheck bench-gemm bench-attention bench-paged bench-launch bench-embed"
BUDGET=465

die() {
  echo "gpu-check: $*" >&2
  exit 2
}

limit_of() {
  local o
  for o in ${GPU_CHECK_LIMITS:-}; do # "step=seconds ...": another limit (tests, a retry)
    if [ "${o%%=*}" = "$1" ] && [ "${o#*=}" -gt 0 ] 2> /dev/null; then
      echo "${o#*=}"
      return
    fi
  done
  case $1 in
    info) echo 15 ;; hardware) echo 30 ;; kernels) echo 40 ;; kernels-sm90a) echo 45 ;;
    memcheck | racecheck) echo 60 ;; bench-gemm) echo 45 ;; bench-attention) echo 100 ;;
    bench-paged) echo 40 ;; bench-launch) echo 15 ;; bench-embed) echo 15 ;; *) echo 0 ;;
  esac
}

now_ms() { date +%s%3N; }

# ---- prepare ---------------------------------------------------------------------------
prepare() {
  local out="" backend=cuda model="" jobs=${JOBS:-2}
  while [ $# -gt 0 ]; do
    case $1 in
      --backend) backend=${2:-}; shift 2 ;;
      --model) model=${2:-}; shift 2 ;;
      --jobs) jobs=${2:-}; shift 2 ;;
      -*) die "prepare: unknown option $1" ;;
      *) [ -z "$out" ] || die "prepare: one BUNDLE folder"; out=$1; shift ;;
    esac
  done
  [ -n "$out" ] || die "usage: gpu-check.sh prepare BUNDLE [--backend cuda|cpu] [--model DIR] [--jobs N]"
  case $backend in cuda | cpu) ;; *) die "prepare: --backend cuda or cpu" ;; esac
  local root
  root=$(cd "$(dirname "$SELF")/.." && pwd)
  [ -f "$root/Makefile" ] || die "prepare: run it from a source tree (no Makefile above $SELF)"
  local v
  v=$(sed -n 's/^#define GP_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' "$root/include/gpuport/version.h" | paste -sd.)
  local lib=lib/libgpuport-$backend.so.$v tool=bin/gpuport-$backend
  echo "gpu-check prepare: building $lib and $tool ($backend backend)"
  if ! make -C "$root" -j"$jobs" BACKEND="$backend" "$lib" "$tool" > "${TMPDIR:-/tmp}/gpu-check-build.$$.log" 2>&1; then
    tail -n 40 "${TMPDIR:-/tmp}/gpu-check-build.$$.log" >&2
    rm -f "${TMPDIR:-/tmp}/gpu-check-build.$$.log"
    die "prepare: the build failed"
  fi
  rm -f "${TMPDIR:-/tmp}/gpu-check-build.$$.log"

  # A fresh folder: never mix files of two bundles.
  if [ -e "$out" ]; then
    [ -f "$out/MANIFEST.txt" ] || die "prepare: $out exists and is no bundle; not overwriting it"
    rm -rf "$out"
  fi
  mkdir -p "$out/bin" "$out/lib" "$out/scripts" || die "prepare: cannot create $out"
  out=$(cd "$out" && pwd)
  local soname
  soname=libgpuport-$backend.so.${v%%.*}
  cp "$root/$tool" "$out/bin/gpuport"
  cp "$root/$lib" "$out/lib/libgpuport-$backend.so.$v"
  ln -s "libgpuport-$backend.so.$v" "$out/lib/$soname"
  # Shared libraries a bare GPU machine may lack; the system's C and C++ runtimes stay.
  local dep path
  for dep in $( (ldd "$root/$tool"; ldd "$root/$lib") 2>/dev/null | awk '/=> \// { print $3 }' | sort -u); do
    case $(basename "$dep") in
      libcudart.so* | libcjson.so* | libutf8proc.so*)
        path=$(readlink -f "$dep")
        cp "$path" "$out/lib/$(basename "$dep")" ;;
    esac
  done
  if command -v strip > /dev/null 2>&1; then
    strip --strip-debug "$out/bin/gpuport" "$out"/lib/*.so* 2> /dev/null
  fi
  cp "$SELF" "$root/scripts/gpu-check-summary.py" "$root/scripts/attention-anchor.py" "$root/scripts/paged-anchor.py" "$out/scripts/"
  chmod +x "$out/scripts/gpu-check.sh"

  # The model of bench embed, when small enough to travel.
  local mdir=${model:-${MINILM_MODEL_DIR:-$root/models/all-MiniLM-L6-v2}} mnote
  if [ -f "$mdir/model.safetensors" ] && [ -f "$mdir/vocab.txt" ]; then
    local kib
    kib=$(du -sk "$mdir" | awk '{ print $1 }')
    if [ "$kib" -lt $((24 * 1024)) ]; then
      mkdir -p "$out/models" && cp -r "$mdir" "$out/models/all-MiniLM-L6-v2"
      mnote="bundled ($((kib / 1024)) MiB)"
    else
      mnote="none: $mdir is $((kib / 1024)) MiB, over the bundle's 24 MiB allowance"
    fi
  else
    mnote="none: no model.safetensors and vocab.txt in $mdir (make model fetches them)"
  fi

  {
    echo "backend=$backend"
    echo "version=$v"
    echo "commit=$(git -C "$root" rev-parse HEAD 2> /dev/null || echo unknown)$(git -C "$root" diff --quiet HEAD 2> /dev/null || echo +changes)"
    echo "built=$(date -u '+%Y-%m-%dT%H:%M:%SZ') on $(uname -m)"
    if [ "$backend" = cuda ]; then
      local nvcc=${NVCC:-$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")}
      echo "nvcc=$("$nvcc" --version 2> /dev/null | sed -n 's/.*release \([0-9.]*\), \(V[0-9.]*\).*/\1 \2/p')"
    fi
    echo "model=$mnote"
  } > "$out/MANIFEST.txt"
  # The bundle's program must start here (library found through $ORIGIN).
  if ! LD_LIBRARY_PATH="$out/lib" "$out/bin/gpuport" version > /dev/null 2>&1; then
    LD_LIBRARY_PATH="$out/lib" "$out/bin/gpuport" version >&2
    die "prepare: $out/bin/gpuport does not start"
  fi
  local total
  total=$(du -sk "$out" | awk '{ print $1 }')
  echo "gpu-check prepare: bundle $out ($backend backend, $(awk -v k="$total" 'BEGIN { printf "%.1f", k / 1024 }') MiB):"
  (cd "$out" && find . -type f -o -type l | sort | while read -r f; do
    if [ -L "$f" ]; then printf '  %10s  %s -> %s\n' link "${f#./}" "$(readlink "$f")"
    else printf '  %10s  %s\n' "$(du -k "$f" | awk '{ print $1 }') KiB" "${f#./}"; fi
  done)
  echo "  model: $mnote"
  [ "$total" -lt $((48 * 1024)) ] || die "prepare: the bundle is over 48 MiB"
  echo "gpu-check prepare: run it with: scripts/gpu-check.sh run $out OUTDIR"
}

# ---- one step (run in a child of this script, under timeout) ----------------------------
# The environment: TOOL, BUNDLE, RAW, SMALL (0/1), BACKEND, HOPPER (0/1).

q_kernels() { if [ "$SMALL" = 1 ]; then echo --quick; fi; }

# The SASS counts: did the sm_90a kernels compile to HGMMA (wgmma) and UTMALDG (TMA),
# the sm_80 ones to HMMA and LDSM (cuobjdump, where the machine has it).
sass_counts() {
  local objdump
  objdump=$(command -v cuobjdump || echo "${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump")
  [ "$BACKEND" = cuda ] && [ -x "$objdump" ] || return 0
  timeout 10 "$objdump" -sass "$BUNDLE"/lib/libgpuport-cuda.so.*.* 2> /dev/null | awk '
    / Function : / { f = $3 }
    /HGMMA/ { g++; gk[f] = 1 } /HMMA/ { h++; hk[f] = 1 } /UTMALDG/ { t++ } /LDSM/ { l++ }
    END { ng = 0; for (k in gk) ng++; nh = 0; for (k in hk) nh++
          printf "{\"HMMA\": %d, \"HMMA_kernels\": %d, \"HGMMA\": %d, \"HGMMA_kernels\": %d, \"UTMALDG\": %d, \"LDSM\": %d}\n", h, nh, g, ng, t, l }' \
    > "$RAW/sass.json"
}

step_info() {
  "$TOOL" info --json > "$RAW/info.json" || return 1
  sass_counts
}

step_hardware() { "$TOOL" selftest --hardware --json > "$RAW/hardware.jsonl"; }

step_kernels() {
  # shellcheck disable=SC2046
  GP_ENABLE_SM90A=0 "$TOOL" selftest --kernels --json $(q_kernels) > "$RAW/kernels.jsonl"
}

step_kernels_sm90a() {
  # shellcheck disable=SC2046
  GP_ENABLE_SM90A=1 "$TOOL" selftest --kernels --json $(q_kernels) > "$RAW/kernels-sm90a.jsonl"
}

sanitize() { # tool name
  local gate=0
  [ "$HOPPER" = 1 ] && gate=1
  GP_ENABLE_SM90A=$gate compute-sanitizer --tool "$1" --target-processes all --error-exitcode 3 --print-limit 50 \
    "$TOOL" selftest --kernels --quick > "$RAW/$2.txt" 2>&1
}
step_memcheck() { sanitize memcheck memcheck; }
step_racecheck() { sanitize racecheck racecheck; }

step_bench_gemm() {
  local args=(bench gemm --json --dtype bf16)
  [ "$SMALL" = 1 ] && args=(bench gemm --json --dtype bf16 --m 96 --n 96 --k 96 --iters 2 --warmup 1)
  GP_ENABLE_SM90A=0 "$TOOL" "${args[@]}" > "$RAW/bench-gemm.json" || return 1
  if [ "$HOPPER" = 1 ]; then GP_ENABLE_SM90A=1 "$TOOL" "${args[@]}" > "$RAW/bench-gemm-sm90a.json" || return 1; fi
  return 0
}

step_bench_attention() {
  command -v python3 > /dev/null 2>&1 || { echo "no python3: the attention sweep needs it" > "$RAW/bench-attention.txt"; return 1; }
  local gates=0
  [ "$HOPPER" = 1 ] && gates="0 1"
  if [ "$SMALL" = 1 ]; then
    GATES=$gates SEQLENS=128 HEAD_DIMS=64 TOKENS=128 WIDTH=128 ITERS=1 WARMUP=0 \
      python3 "$BUNDLE/scripts/attention-anchor.py" "$RAW" "$TOOL" > "$RAW/bench-attention.txt" 2>&1
  else
    GATES=$gates python3 "$BUNDLE/scripts/attention-anchor.py" "$RAW" "$TOOL" > "$RAW/bench-attention.txt" 2>&1
  fi
}

# The memory bandwidth of device 0 from its data sheet (GB/s), for the cards whose goals
# are stated against it; empty elsewhere (bench attention --paged then times a copy).
datasheet_bw() {
  [ "$BACKEND" = cuda ] && command -v nvidia-smi > /dev/null 2>&1 || return 0
  case $(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2> /dev/null) in
    *H200*) echo 4800 ;;                             # H200 SXM and NVL: HBM3e, 4.8 TB/s
    *"H100 80GB HBM3"* | *H100*SXM*) echo 3350 ;;    # H100 SXM5: 3.35 TB/s
    *H100*NVL*) echo 3900 ;;
    *H100*PCIe*) echo 2000 ;;
  esac
}

step_bench_paged() {
  local args=(bench attention --paged --json) bw
  if [ "$SMALL" = 1 ]; then
    args+=(--batch 1,2 --context 64,256 --iters 2 --warmup 1)
  else
    # Batch 32 at context 8k is the goal's point (decode at >= 70% of HBM bandwidth).
    args+=(--batch 1,8,32,64 --context 2048,8192,32768 --iters 10 --warmup 2)
    bw=$(datasheet_bw)
    [ -n "$bw" ] && args+=(--mem-bw "$bw")
  fi
  "$TOOL" "${args[@]}" > "$RAW/bench-paged.json" || return 1
  # PyTorch's SDPA on dense K/V of each row's shape (its error, without PyTorch or a GPU)
  python3 "$BUNDLE/scripts/paged-anchor.py" "$RAW/bench-paged.json" "$RAW/paged-anchor.json" \
    > "$RAW/paged-anchor.txt" 2>&1 || true
}

step_bench_launch() {
  if [ "$SMALL" = 1 ]; then "$TOOL" bench launch --json --iters 2 --warmup 1 --kernels 50 > "$RAW/bench-launch.json"
  else "$TOOL" bench launch --json > "$RAW/bench-launch.json"; fi
}

step_bench_embed() {
  if [ "$SMALL" = 1 ]; then
    MINILM_MODEL_DIR="$BUNDLE/models/all-MiniLM-L6-v2" "$TOOL" bench embed --json --iters 2 > "$RAW/bench-embed.json"
  else
    MINILM_MODEL_DIR="$BUNDLE/models/all-MiniLM-L6-v2" "$TOOL" bench embed --json > "$RAW/bench-embed.json"
  fi
}

# Why a step cannot run here (empty: it can).
skip_reason() {
  case $1 in
    kernels-sm90a)
      if [ "$BACKEND" = cpu ]; then echo "cpu backend: GP_ENABLE_SM90A does nothing there; the kernels step ran the sm90a emulation mode"
      elif [ "$HOPPER" != 1 ]; then echo "compute capability ${CC:-unknown} is not 9.0: the sm_90a kernels cannot run"; fi ;;
    memcheck | racecheck)
      if [ "$BACKEND" = cpu ]; then echo "cpu backend: compute-sanitizer checks CUDA kernels (the cpu suites run under ASan+UBSan)"
      elif ! command -v compute-sanitizer > /dev/null 2>&1; then echo "compute-sanitizer not found"; fi ;;
    bench-embed)
      if [ ! -f "$BUNDLE/models/all-MiniLM-L6-v2/model.safetensors" ]; then
        echo "the bundle has no model, $(sed -n 's/^model=none: //p' "$BUNDLE/MANIFEST.txt")"
      fi ;;
  esac
}

# ---- run -------------------------------------------------------------------------------
run() {
  local bundle="" out="" only=""
  SMALL=0
  while [ $# -gt 0 ]; do
    case $1 in
      --small) SMALL=1; shift ;;
      --only) only=${2:-}; shift 2 ;;
      -*) die "run: unknown option $1" ;;
      *)
        if [ -z "$bundle" ]; then bundle=$1; elif [ -z "$out" ]; then out=$1; else die "run: BUNDLE and OUTDIR only"; fi
        shift ;;
    esac
  done
  [ -n "$bundle" ] && [ -n "$out" ] || die "usage: gpu-check.sh run BUNDLE OUTDIR [--small] [--only STEP,...]"
  [ -f "$bundle/MANIFEST.txt" ] && [ -x "$bundle/bin/gpuport" ] || die "run: $bundle is no bundle (gpu-check.sh prepare makes one)"
  local s
  for s in ${only//,/ }; do
    [ "$(limit_of "$s")" != 0 ] || die "run: --only: no step '$s' (steps: $STEPS)"
  done
  BUNDLE=$(cd "$bundle" && pwd)
  mkdir -p "$out" || die "run: cannot create $out"
  out=$(cd "$out" && pwd)
  rm -f "$out/summary.json" "$out/summary.md" "$out/gpu-check-raw.tar.gz"
  RAW=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || die "run: no temporary folder"
  local t0
  t0=$(now_ms)
  BACKEND=$(sed -n 's/^backend=//p' "$BUNDLE/MANIFEST.txt")
  TOOL=$BUNDLE/bin/gpuport
  # The bundle's libraries first (its cuda runtime); cuBLAS (dlopened by bench gemm) from
  # the system or PyTorch's wheel when the loader does not know it.
  LD_LIBRARY_PATH=$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  if [ "$BACKEND" = cuda ] && ! ldconfig -p 2> /dev/null | grep -q 'libcublas.so.1[23] '; then
    local d
    for d in "${CUDA_HOME:-/usr/local/cuda}/lib64" \
      $(python3 -c 'import os, nvidia.cublas as m; print(os.path.join(list(m.__path__)[0], "lib"))' 2> /dev/null); do
      if ls "$d"/libcublas.so.1[23] > /dev/null 2>&1; then LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d; break; fi
    done
  fi
  # A bundle built against newer system libraries than this machine has does not start:
  # then, where this script sits in a source tree and the toolchain is here, build it
  # again on this machine (the time counts against the budget).
  local rebuilt=""
  if ! LD_LIBRARY_PATH=$LD_LIBRARY_PATH "$TOOL" version > "$RAW/bundle-start.txt" 2>&1; then
    local root
    root=$(cd "$(dirname "$SELF")/.." && pwd)
    echo "gpu-check: the bundle's program does not start here: $(tail -n 1 "$RAW/bundle-start.txt")" >&2
    if [ -f "$root/Makefile" ] && { [ "$BACKEND" = cpu ] || command -v nvcc > /dev/null 2>&1 ||
      [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; }; then
      echo "gpu-check: building it again here from $root" >&2
      if JOBS=$(nproc 2> /dev/null || echo 4) bash "$SELF" prepare "$RAW/bundle" --backend "$BACKEND" > "$RAW/rebuild.txt" 2>&1; then
        BUNDLE=$RAW/bundle
        TOOL=$BUNDLE/bin/gpuport
        LD_LIBRARY_PATH=$BUNDLE/lib:$LD_LIBRARY_PATH
        rebuilt="rebuilt here: the prepared program did not start ($(tail -n 1 "$RAW/bundle-start.txt"))"
      else
        echo "gpu-check: the rebuild failed (see rebuild.txt in the archive)" >&2
      fi
    fi
  fi
  # The compute capability of device 0, as the library sees it.
  CC=""
  HOPPER=0
  if [ "$BACKEND" = cuda ]; then
    CC=$("$TOOL" info --json 2> /dev/null | grep -o '"compute_capability": "[0-9.]*"' | head -n 1 | sed 's/.*: "\(.*\)"/\1/')
  fi
  [ "$CC" = 9.0 ] && HOPPER=1
  export TOOL BUNDLE RAW SMALL BACKEND HOPPER CC LD_LIBRARY_PATH
  {
    echo "started=$(date -u '+%Y-%m-%dT%H:%M:%SZ')"
    echo "host=$(uname -srm)"
    echo "small=$SMALL"
    echo "compute_capability=$CC"
    sed 's/^/bundle_/' "$BUNDLE/MANIFEST.txt"
    if command -v nvidia-smi > /dev/null 2>&1; then
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,compute_cap --format=csv 2>&1 | sed 's/^/nvidia_smi=/'
    fi
    [ -n "$rebuilt" ] && echo "bundle_rebuilt=$rebuilt"
    echo "compute_sanitizer=$(command -v compute-sanitizer || echo none)"
    echo "python3=$(command -v python3 || echo none)"
  } > "$RAW/environment.txt"

  local name lim left st rc t1 secs reason bad=0
  printf 'step\tstatus\tseconds\tlimit\trc\treason\n' > "$RAW/steps.tsv"
  for name in $STEPS; do
    if [ -n "$only" ] && ! printf ',%s,' "$only" | grep -q ",$name,"; then continue; fi
    lim=$(limit_of "$name")
    left=$(((BUDGET * 1000 - ($(now_ms) - t0)) / 1000))
    [ "$lim" -gt "$left" ] && lim=$left
    reason=$(skip_reason "$name")
    rc=""
    secs=0
    if [ -n "$reason" ]; then
      st=skip
    elif [ "$left" -lt 5 ]; then
      st=skip
      reason="no time left in the ${BUDGET} s budget"
    else
      t1=$(now_ms)
      timeout --kill-after=5 "$lim" bash "$SELF" __step "$name" > "$RAW/$name.stdout.txt" 2> "$RAW/$name.stderr.txt"
      rc=$?
      secs=$(awk -v a="$t1" -v b="$(now_ms)" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
      case $rc in
        0) st=pass ;;
        124 | 137) st=timeout; reason="over its ${lim} s limit" ;;
        *) st=fail; reason="exit status $rc$(tail -n 1 "$RAW/$name.stderr.txt" 2> /dev/null | tr -d '\t' | cut -c1-200 | sed 's/^/: /')" ;;
      esac
      [ -s "$RAW/$name.stdout.txt" ] || rm -f "$RAW/$name.stdout.txt"
      [ -s "$RAW/$name.stderr.txt" ] || rm -f "$RAW/$name.stderr.txt"
    fi
    case $st in fail | timeout) bad=1 ;; esac
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$st" "$secs" "$lim" "$rc" "$reason" >> "$RAW/steps.tsv"
    printf 'gpu-check: %-16s %-7s %6s s (limit %s s)%s\n' "$name" "$st" "$secs" "$lim" "${reason:+  $reason}"
  done
  echo "finished=$(date -u '+%Y-%m-%dT%H:%M:%SZ') after $(awk -v a="$t0" -v b="$(now_ms)" 'BEGIN { printf "%.1f", (b - a) / 1000 }') s" >> "$RAW/environment.txt"

  # The raw outputs, each capped, in one archive; then the summary reads them.
  local f
  for f in "$RAW"/*; do
    [ "$f" = "$RAW/bundle" ] && continue
    if [ -f "$f" ] && [ "$(wc -c < "$f")" -gt $((2 * 1024 * 1024)) ]; then
      head -c $((2 * 1024 * 1024)) "$f" > "$f.cut" && mv "$f.cut" "$f" && printf '\n[cut at 2 MiB]\n' >> "$f"
    fi
  done
  tar czf "$out/gpu-check-raw.tar.gz" --exclude=./bundle -C "$RAW" . || echo "gpu-check: the raw archive failed" >&2
  if command -v python3 > /dev/null 2>&1; then
    python3 "$BUNDLE/scripts/gpu-check-summary.py" "$RAW" "$out" "$BUDGET" || summary_fallback "$out"
  else
    summary_fallback "$out"
  fi
  rm -rf "$RAW"
  cat "$out/summary.md" 2> /dev/null
  return $bad
}

# Without python3: summary.json and summary.md from steps.tsv alone (no figures).
summary_fallback() {
  local out=$1
  awk -F '\t' -v budget="$BUDGET" '
    function esc(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); gsub(/\t/, " ", s); return s }
    NR == 1 { next }
    { n++; line[n] = sprintf("    {\"name\": \"%s\", \"status\": \"%s\", \"seconds\": %s, \"limit_s\": %s, \"reason\": \"%s\", \"figures\": {}, \"kernels\": []}",
                              esc($1), esc($2), $3 + 0, $4 + 0, esc($6 " (no python3: no figures)"));
      if ($2 == "fail" || $2 == "timeout") bad = 1 }
    END { printf "{\n  \"format\": 1,\n  \"budget_s\": %d,\n  \"result\": \"%s\",\n  \"steps\": [\n", budget, bad ? "fail" : "pass";
          for (i = 1; i <= n; i++) printf "%s%s\n", line[i], i < n ? "," : "";
          printf "  ]\n}\n" }' "$RAW/steps.tsv" > "$out/summary.json"
  {
    echo "| step | status | seconds | limit | note |"
    echo "|---|---|---|---|---|"
    awk -F '\t' 'NR > 1 { printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $6 }' "$RAW/steps.tsv"
  } > "$out/summary.md"
}

case ${1:-} in
  prepare) shift; prepare "$@" ;;
  run) shift; run "$@" ;;
  __step)
    case ${2:-} in
      info) step_info ;; hardware) step_hardware ;; kernels) step_kernels ;; kernels-sm90a) step_kernels_sm90a ;;
      memcheck) step_memcheck ;; racecheck) step_racecheck ;; bench-gemm) step_bench_gemm ;;
      bench-attention) step_bench_attention ;; bench-paged) step_bench_paged ;; bench-launch) step_bench_launch ;;
      bench-embed) step_bench_embed ;;
      *) exit 2 ;;
    esac ;;
  *)
    sed -n '2,/^set -u/p' "$SELF" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2 ;;
esac
