#!/bin/sh
# run.sh DIR [TOOL [EXAMPLES]] - runs every test binary (test_*) in DIR, then, when TOOL
# is given and exists, `TOOL selftest`, `selftest --hardware` and `selftest --kernels`
# (cpu: once, every emulation mode), then every example program in the directory
# EXAMPLES (each checks itself against a float64 reference and exits non-zero when
# wrong): on the cpu backend at warp width 32 and 64 (GP_CPU_WARP_SIZE=64 runs the
# programs' width-64 kernel builds), on GPU backends once when a device answers. The cpu
# backend runs everything twice, with 1 and with 4 virtual devices (GP_CPU_DEVICES), so
# multi-device code paths are exercised (a sanitizer build, SAN=1, once with 4: it
# covers device 0's paths too, and halves the slowest part of make test); the cuda and
# hip binaries run once, without
# Check's fork (CUDA is undefined after fork). Each suite prints how many of its cases
# and tests ran and were skipped (test/check_util.h); a suite that exits 77 was skipped
# as a whole (a GPU build on a machine without a device, an instruction set the build
# does not have), and is counted so, never as passed.
#
# Environment: BACKEND (cpu|cuda|hip; default: guessed from DIR, else cpu), SAN=1 for
# sanitizer builds, GP_TEST_TIMEOUT seconds per binary (default 900), GP_TEST_VERBOSE=1
# every line each run prints (by default: what ran, and the whole output of a run that
# failed), GP_TEST_TALLY a
# file to which the totals are appended (make test adds up several runs of this script).
# Prints one header line per run and ends with "tests DIR: N passed, N failed, N skipped
# in S s" (binaries x runs; the cases and tests the passing suites skipped are added up
# beside "passed"); exits non-zero when anything failed.
#
# run.sh --run LABEL CMD...   one counted run of CMD (exit 0 passed, 77 skipped, else
#                             failed), with the same summary and GP_TEST_TALLY line
# run.sh --begin FILE         starts a tally (the clock)
# run.sh --end FILE           prints the tally's one summary line, non-zero on failures

tally_begin() {
  mkdir -p "$(dirname "$1")" && echo "start $(date +%s)" > "$1"
}

tally_end() {
  if [ ! -f "$1" ]; then
    echo "run.sh --end: no tally $1 (run.sh --begin makes it)" >&2
    exit 2
  fi
  awk -v now="$(date +%s)" '
    $1 == "start" { start = $2; next }
    $1 == "runs" { p += $2; f += $3; s += $4; pc += $5; pt += $6; next }
    $1 == "failed" { $1 = ""; names = names "\n " $0 }
    END {
      if (f) printf "failed:%s\n", names
      w = (pc || pt) ? sprintf(" (within those that passed: %d cases and %d tests skipped)", pc, pt) : ""
      printf "make test: %d passed%s, %d failed, %d skipped in %d s\n", p, w, f, s, now - start
      exit f != 0
    }' "$1"
}

case "$1" in
  --begin) tally_begin "$2"; exit $? ;;
  --end) tally_end "$2"; exit $? ;;
esac

one=""
if [ "$1" = --run ]; then
  one=$2
  shift 2
  if [ -z "$one" ] || [ $# -eq 0 ]; then
    echo "usage: $0 --run LABEL CMD..." >&2
    exit 2
  fi
else
  dir=$1
  tool=$2
  examples=$3
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    echo "usage: $0 DIR [TOOL [EXAMPLES]] | --run LABEL CMD... | --begin FILE | --end FILE" >&2
    exit 2
  fi
fi
start=$(date +%s)

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
skips=""
part_cases=0 # cases and tests skipped within suites that passed
part_tests=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run LABEL DEVICES CMD...: one run, counted.
run() {
  label=$1
  devs=$2
  shift 2
  if [ -n "$devs" ]; then
    echo "== $label [$BACKEND, GP_CPU_DEVICES=$devs${SAN:+, SAN=$SAN}] =="
  else
    echo "== $label [$BACKEND${SAN:+, SAN=$SAN}] =="
  fi
  # The output goes into a file, for the suite's tally line (test/check_util.h), and to
  # the terminal: whole with GP_TEST_VERBOSE=1, else only the lines that say what ran
  # (Check's totals, the tally, seeds, skips), and all of it when the run failed (the
  # expected failures a passing suite provokes stay out of the way). The exit status
  # comes back through another file.
  if [ "${GP_TEST_VERBOSE:-0}" = 1 ]; then
    { if [ -n "$devs" ]; then GP_CPU_DEVICES=$devs $runner "$@"; else $runner "$@"; fi
      echo $? > "$work/rc"; } 2>&1 | tee "$work/out"
  else
    { if [ -n "$devs" ]; then GP_CPU_DEVICES=$devs $runner "$@"; else $runner "$@"; fi
      echo $? > "$work/rc"; } > "$work/out" 2>&1
  fi
  rc=$(cat "$work/rc")
  if [ "${GP_TEST_VERBOSE:-0}" != 1 ]; then
    if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
      echo "-- $label failed (exit $rc); its output:"
      cat "$work/out"
    else
      grep -E '^[0-9]+%: Checks|: cases: [0-9]+ ran|: skipped|seed .*replay with|^[a-z_0-9]+ .*: (ok|passed)$|^gpuport selftest: .* (passed|failed)|^modes: |^-- mode ' "$work/out" | tail -n 40
    fi
  fi
  # "test_x: cases: N ran, K skipped; tests: P passed, F failed, S skipped"
  set -- $(sed -n 's/.*: cases: [0-9]* ran, \([0-9]*\) skipped; tests: [0-9]* passed, [0-9]* failed, \([0-9]*\) skipped$/\1 \2/p' "$work/out" | tail -1)
  if [ $# -eq 2 ] && [ $rc -eq 0 ]; then
    part_cases=$((part_cases + $1))
    part_tests=$((part_tests + $2))
  fi
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
  elif [ $rc -eq 77 ]; then
    # Exit 77 (the automake convention): the binary said why it skipped (no device,
    # not for this build).
    skipped=$((skipped + 1))
    skips="$skips $label"
  else
    failed=$((failed + 1))
    # The reason goes beside the name (Check's failure lines, else the output's last
    # lines), so that the summary at the very end of a long log says what went wrong.
    why=$(grep -E ':[0-9]+:[FE]:' "$work/out" | head -n 3)
    [ -n "$why" ] || why=$(tail -n 3 "$work/out")
    failures="$failures
  $label (${devs:+GP_CPU_DEVICES=$devs, }exit $rc)
$(printf '%s\n' "$why" | cut -c1-400 | sed 's/^/    | /')"
  fi
}

# summary WHAT: the last line, the tally line, the exit status.
summary() {
  if [ -n "$skips" ]; then
    echo "skipped:$skips"
  fi
  if [ $failed -ne 0 ]; then
    echo "failed:$failures"
  fi
  within=""
  if [ $part_cases -ne 0 ] || [ $part_tests -ne 0 ]; then
    within=" (within those that passed: $part_cases cases and $part_tests tests skipped)"
  fi
  echo "$1: $passed passed$within, $failed failed, $skipped skipped in $(( $(date +%s) - start )) s"
  if [ -n "$GP_TEST_TALLY" ]; then
    echo "runs $passed $failed $skipped $part_cases $part_tests" >> "$GP_TEST_TALLY"
    printf '%s\n' "$failures" | sed -n 's/^  \(..*\)/failed \1/p' >> "$GP_TEST_TALLY"
  fi
  [ $failed -eq 0 ]
}

if [ -n "$one" ]; then
  run "$one" "" "$@"
  summary "$one"
  exit $?
fi

# The sanitizer builds run once, with 4 devices: device 0's paths and the multi-device
# ones under ASan+UBSan in one pass (the plain build runs both layouts).
device_runs=""
if [ "$BACKEND" = cpu ]; then device_runs="1 4"; fi
if [ "$BACKEND" = cpu ] && [ -n "${SAN:-}" ]; then device_runs="4"; fi

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
# kernel at 64 (GP_CPU_WARP_SIZE=64: the width-64 builds, modules compiled at 64); the
# attention suites too, whose portable mode then launches the width-32 descriptors with
# the device at 64 (a plan must size its blocks for the width the launch runs at).
if [ "$BACKEND" = cpu ] && [ "$SAN" != 1 ]; then
  for name in test_graph test_module test_attention test_attention_bwd test_attention_kvcache; do
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

summary "tests $dir${SAN:+ (SAN=$SAN)}"
