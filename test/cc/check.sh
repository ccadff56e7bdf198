#!/bin/sh
# check.sh - gpuport-cc, pkg-config and the CMake helper from an installed prefix:
# installs gpuport (cpu) into a temporary PREFIX; gpuport-cc builds warp_sum.cu (one
# file: kernel and main) at warp widths 32 and 64 and it passes at GP_CPU_WARP_SIZE=32
# and 64; with --sanitize, overflow.cu's write past a GP_SHARED array must end in an
# AddressSanitizer report and a non-zero exit; a C main (host.c) with a dialect object
# (dialect.cu) links with `pkg-config --libs gpuport-cpu` alone; with cmake present,
# gpuport_add_executable builds warp_sum.cu at both widths. Run from the repository
# root after the cpu backend is built (make test does).
set -u
top=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
make -s install BACKEND=cpu PREFIX="$tmp/prefix" >"$tmp/install.log" 2>&1 || { echo "FAIL: make install"; tail -20 "$tmp/install.log"; exit 1; }
cc_=$tmp/prefix/bin/gpuport-cc

runs() { # runs PROGRAM NAME: passes at both widths, reporting each width
  for w in 32 64; do
    if GP_CPU_WARP_SIZE=$w "$1" >"$tmp/run.log" 2>&1 && grep -q "warp width $w, 0 errors: PASSED" "$tmp/run.log"; then
      sed "s/^/  $2 /" "$tmp/run.log"
    else
      echo "FAIL $2 at GP_CPU_WARP_SIZE=$w:"; cat "$tmp/run.log"; fail=1
    fi
  done
}

echo "== gpuport-cc test/cc/warp_sum.cu"
if "$cc_" -O1 -Wall -o "$tmp/warp_sum" test/cc/warp_sum.cu 2>"$tmp/build.log"; then runs "$tmp/warp_sum" gpuport-cc:
else echo "FAIL: gpuport-cc warp_sum.cu"; cat "$tmp/build.log"; fail=1; fi

echo "== gpuport-cc --sanitize test/cc/overflow.cu"
if "$cc_" --sanitize -o "$tmp/overflow" test/cc/overflow.cu 2>"$tmp/build.log"; then
  "$tmp/overflow" >"$tmp/run.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ] && grep -q 'ERROR: AddressSanitizer' "$tmp/run.log" && grep -q 'overflow.cu:10' "$tmp/run.log"; then
    echo "  exit $rc, $(grep -m1 'SUMMARY: AddressSanitizer' "$tmp/run.log")"
  else echo "FAIL: no AddressSanitizer report of the GP_SHARED overflow (exit $rc):"; head -20 "$tmp/run.log"; fail=1; fi
else echo "FAIL: gpuport-cc --sanitize overflow.cu"; cat "$tmp/build.log"; fail=1; fi

echo "== a C main and a dialect object through pkg-config"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
if c++ -std=c++17 -x c++ -DGP_BUILD_CPU $(pkg-config --cflags gpuport-cpu) -c test/cc/dialect.cu -o "$tmp/dialect.o" &&
   cc -std=c11 -o "$tmp/host" test/cc/host.c "$tmp/dialect.o" $(pkg-config --cflags --libs gpuport-cpu) \
     -Wl,-rpath,"$tmp/prefix/lib" 2>"$tmp/build.log"; then
  "$tmp/host" | sed 's/^/  /'; [ "$(GP_CPU_WARP_SIZE=32 "$tmp/host")" = "host.c: 0 errors: PASSED" ] || fail=1
else echo "FAIL: host.c + dialect.o with pkg-config --libs gpuport-cpu"; cat "$tmp/build.log"; fail=1; fi

if command -v cmake >/dev/null 2>&1; then
  echo "== gpuport_add_executable (CMake)"
  mkdir -p "$tmp/cm" && cp test/cc/CMakeLists.txt test/cc/warp_sum.cu "$tmp/cm/"
  if cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/cmake.log" 2>&1 &&
     cmake --build "$tmp/cm/build" >>"$tmp/cmake.log" 2>&1; then runs "$tmp/cm/build/warp_sum" cmake:
  else echo "FAIL: CMake helper"; tail -30 "$tmp/cmake.log"; fail=1; fi
else
  echo "== gpuport_add_executable: cmake not found, skipped"
fi
cd "$top"
if [ $fail -eq 0 ]; then echo "gpuport-cc: all passed"; else echo "gpuport-cc: FAILED"; fi
exit $fail
