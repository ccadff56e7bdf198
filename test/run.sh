#!/bin/sh
# run.sh DIR [TOOL [EXAMPLES]] - runs every test binary (test_*) in DIR, then, when TOOL
# is given and exists, `TOOL selftest`, `selftest --hardware` and `selftest --kernels`
# (cpu: once, every emulation mode), then every example program in the directory
# EXAMPLES (each checks itself against a float64 reference and exits non-zero when
# wrong): on the cpu backend at warp width 32 and 64 (GP_CPU_WARP_SIZE=64 runs the
# programs' width-64 kernel builds), on GPU backends once when a device answers. The cpu backend runs everything twice, with 1 and with 4
# virtual devices (GP_CPU_DEVICES), so multi-device code paths are exercised; the cuda
# and hip binaries run once, without Check's fork (CUDA is undefined after fork), and
# skip by themselves when no device answers.
#
# Environment: BACKEND (cpu|cuda|hip; default: guessed from DIR, else cpu), SAN=1 for
# sanitizer builds, GP_TEST_TIMEOUT seconds per binary (default 900).
# Prints one header line per run and ends with "N passed, N failed, N skipped" (binaries x
# runs; exit status 77 means the binary skipped: no device);
# exits non-zero when anything failed.

dir=$1
tool=$2
examples=$3
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
  echo "usage: $0 DIR [TOOL]" >&2
  exit 2
fi

if [ -z "$BACKEND" ]; then
  case "$dir" in
    *cuda*) BACKEND=cuda ;;
    *hip*) BACKEND=hip ;;
    *) BACKEND=cpu ;;
  esac
fi

if [ "$SAN" = 1 ]; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export ASAN_OPTIONS UBSAN_OPTIONS
fi
if [ "$BACKEND" != cpu ]; then
  CK_FORK=no
  export CK_FORK
fi

limit=${GP_TEST_TIMEOUT:-900}
runner=""
if command -v timeout >/dev/null 2>&1; then runner="timeout $limit"; fi

passed=0
failed=0
skipped=0
failures=""

# run LABEL DEVICES CMD...: one run, counted.
run() {
  label=$1
  devs=$2
  shift 2
  if [ -n "$devs" ]; then
    echo "== $label [$BACKEND, GP_CPU_DEVICES=$devs${SAN:+, SAN=$SAN}] =="
    GP_CPU_DEVICES=$devs $runner "$@"
  else
    echo "== $label [$BACKEND${SAN:+, SAN=$SAN}] =="
    $runner "$@"
  fi
  rc=$?
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
  elif [ $rc -eq 77 ]; then
    # Exit 77 (the automake convention): the binary found no device and skipped.
    skipped=$((skipped + 1))
  else
    failed=$((failed + 1))
    failures="$failures
  $label (${devs:+GP_CPU_DEVICES=$devs, }exit $rc)"
  fi
}

if [ "$BACKEND" = cpu ]; then device_runs="1 4"; else device_runs=""; fi

found=0
for bin in "$dir"/test_*; do
  if [ ! -f "$bin" ] || [ ! -x "$bin" ]; then continue; fi
  found=$((found + 1))
  name=$(basename "$bin")
  if [ -n "$device_runs" ]; then
    for n in $device_runs; do run "$name" "$n" "$bin"; done
  else
    run "$name" "" "$bin"
  fi
done
if [ $found -eq 0 ]; then
  echo "no test binaries in $dir" >&2
  failed=$((failed + 1))
fi
# Suites whose kernels have no width-64 test case of their own run once more with every
# kernel at 64 (GP_CPU_WARP_SIZE=64: the width-64 builds, modules compiled at 64).
if [ "$BACKEND" = cpu ] && [ "$SAN" != 1 ]; then
  for name in test_graph test_module; do
    if [ -x "$dir/$name" ]; then run "$name (warp width 64)" 1 env GP_CPU_WARP_SIZE=64 "$dir/$name"; fi
  done
fi

if [ -n "$tool" ]; then
  if [ -x "$tool" ]; then
    if [ -n "$device_runs" ]; then
      for n in $device_runs; do run "$(basename "$tool") selftest" "$n" "$tool" selftest; done
      # Every kernel of the library at warp width 64 (the library has their 64 builds).
      run "$(basename "$tool") selftest (warp width 64)" 1 env GP_CPU_WARP_SIZE=64 "$tool" selftest
      # The lane probes through the emulation, and every kernel family in every
      # emulation mode, each line naming the kernel that ran.
      run "$(basename "$tool") selftest --hardware" 1 "$tool" selftest --hardware
      run "$(basename "$tool") selftest --kernels" 1 "$tool" selftest --kernels
    else
      run "$(basename "$tool") selftest" "" "$tool" selftest
      run "$(basename "$tool") selftest --hardware" "" "$tool" selftest --hardware
      run "$(basename "$tool") selftest --kernels" "" "$tool" selftest --kernels
    fi
  else
    echo "($tool not built: selftest skipped)"
  fi
fi

if [ -n "$examples" ] && [ -d "$examples" ]; then
  if [ "$BACKEND" = cpu ]; then widths="32 64"; else widths=""; fi
  if [ "$BACKEND" = cpu ] || { [ -x "$tool" ] && "$tool" info >/dev/null 2>&1; }; then
    for ex in "$examples"/*; do
      if [ ! -f "$ex" ] || [ ! -x "$ex" ]; then continue; fi
      # minilm embeds the sentences it is given (test_minilm checks it against the
      # reference library); the other examples check themselves.
      set --
      if [ "$(basename "$ex")" = minilm ]; then set -- "A man is eating food." "A man is riding a horse."; fi
      if [ -n "$widths" ]; then
        for w in $widths; do run "example $(basename "$ex") (warp width $w)" "" env GP_CPU_WARP_SIZE=$w "$ex" "$@"; done
      else
        run "example $(basename "$ex")" "" "$ex" "$@"
      fi
    done
  else
    echo "(no device: examples not run)"
  fi
fi

if [ $failed -ne 0 ]; then
  echo "failed:$failures"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
