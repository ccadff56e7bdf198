#!/bin/sh
# check.sh LIB... - each gpuport shared library loads with dlopen where static TLS is
# scarce (docs/LAUNCH_ABI.md section 3, "Thread-local storage"): builds the helper
# objects (tls_filler_<N>.so with an initial-exec TLS block of N bytes, tls_reserve.so of
# the library's limit, tls_omp.so built with -fopenmp, which brings libgomp) and the
# loader test/tls/test_dlopen.c (a Check suite not linked with gpuport), runs it on every
# LIB, then loads each LIB with Python's ctypes beside the same objects
# (test/tls/ctypes_check.py). Prints each library's TLS figures. Run from the repository
# root (make test does; .ci/run runs it on the cuda and hip libraries too).
set -u
if [ $# -eq 0 ]; then
  echo "usage: $0 LIB..." >&2
  exit 2
fi
CC=${CC:-cc}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
check_flags=$(pkg-config --cflags check 2>/dev/null)
check_libs=$(pkg-config --libs check 2>/dev/null || echo "-lcheck -lsubunit -lrt -lm")

$CC -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra ${WERROR:+-Werror} -pthread -Iinclude $check_flags test/tls/test_dlopen.c \
  -o "$out/test_dlopen" -ldl $check_libs -lm || { echo "FAIL: test/tls/test_dlopen.c does not build"; exit 1; }
limit=$("$out/test_dlopen" --limit) || exit 1
for n in 16 32 64 128 256 512 1024 2048 4096; do
  $CC -O1 -fPIC -shared -fvisibility=hidden -DGP_TLS_FILLER_BYTES="$n" test/tls/filler.c -o "$out/tls_filler_$n.so" || exit 1
done
$CC -O1 -fPIC -shared -fvisibility=hidden -DGP_TLS_FILLER_BYTES="$limit" test/tls/filler.c -o "$out/tls_reserve.so" || exit 1
$CC -O1 -fPIC -shared -fvisibility=hidden -fopenmp test/tls/omp.c -o "$out/tls_omp.so" || exit 1

fail=0
echo "== dlopen where static TLS is scarce: $*"
CK_FORK=yes OMP_NUM_THREADS=2 "$out/test_dlopen" "$out" "$@" || fail=1
if command -v python3 >/dev/null 2>&1; then
  for lib in "$@"; do
    echo "== python3 ctypes: $lib"
    OMP_NUM_THREADS=2 python3 test/tls/ctypes_check.py "$out" "$lib" || fail=1
  done
else
  echo "(python3 not found: the ctypes cases skipped)"
fi
exit $fail
