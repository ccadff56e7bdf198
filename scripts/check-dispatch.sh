#!/bin/sh
# check-dispatch.sh DIR - every entry of the implementation tables is tested: switching
# any one off must make a test fail. DIR holds a cpu build's test binaries (build/cpu/test)
# and dispatch-entries, which prints the tables' entries (test/dispatch/entries.c), so a
# new row is checked without touching this script.
#
# For each entry ("gemm.sm80") the test case "dispatch" of its operation's suite (test_gemm,
# test_attention, test_attention_bwd, test_attention_kvcache: one small case per kernel of every family, each
# checked against the float64 reference and for the kernel chosen) runs with
# GP__DISPATCH_DISABLE=<entry>, which test builds alone read (test/dispatch_hook.c): the
# walk passes the entry over, and some check must fail. The same test cases first run with
# nothing switched off and must pass. Prints one line per entry; exits 1 naming every entry
# no test covers, 2 when the binaries are missing.
set -u
DIR=${1:-build/cpu/test}
for b in dispatch-entries test_gemm test_attention test_attention_bwd test_attention_kvcache; do
  if [ ! -x "$DIR/$b" ]; then
    echo "check-dispatch: $DIR/$b is missing (make check-dispatch builds it)" >&2
    exit 2
  fi
done
start=$(date +%s)
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

suite_of() {
  case $1 in
    gemm.*) echo test_gemm ;;
    attention_fwd.*) echo test_attention ;;
    attention_bwd.*) echo test_attention_bwd ;;
    attention_kvcache.*) echo test_attention_kvcache ;;
    *) echo "" ;;
  esac
}

# run SUITE DISABLE: the suite's "dispatch" test case; its output in $tmp/out.
run() {
  GP__DISPATCH_DISABLE=$2 CK_RUN_CASE=dispatch "$DIR/$1" > "$tmp/out" 2>&1
}

status=0
for s in test_gemm test_attention test_attention_bwd test_attention_kvcache; do
  if ! run "$s" "" || ! grep -q '^100%: Checks: [1-9]' "$tmp/out"; then
    echo "check-dispatch: $s's dispatch test case fails (or runs nothing) with every entry on:"
    tail -5 "$tmp/out"
    status=1
  fi
done
[ $status -eq 0 ] || exit 1

entries=$("$DIR/dispatch-entries") || exit 2
n=0
uncovered=""
for e in $entries; do
  n=$((n + 1))
  s=$(suite_of "$e")
  if [ -z "$s" ]; then
    echo "check-dispatch: $e belongs to no known operation: add its suite to scripts/check-dispatch.sh"
    uncovered="$uncovered $e"
    continue
  fi
  if run "$s" "$e"; then
    echo "NOT COVERED  $e: $s passes with it switched off"
    uncovered="$uncovered $e"
  else
    first=$(grep -m1 -E ':(F|E):' "$tmp/out" | sed 's/^[^:]*:[0-9]*:[FE]:[^:]*:\([^:]*\):[0-9]*: */\1: /' | cut -c1-150)
    echo "covered      $e: $s fails (${first:-exit status non-zero})"
  fi
done
echo "check-dispatch: $n entries, $(( $(date +%s) - start )) s"
if [ -n "$uncovered" ]; then
  echo "check-dispatch: no test fails with these switched off:$uncovered"
  exit 1
fi
