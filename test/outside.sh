#!/bin/sh
# Installs gpuport into a temporary prefix and builds a program outside the tree
# against it, with pkg-config and with CMake's find_package, then runs both.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -C "$top" -s install BACKEND=cpu PREFIX="$tmp/prefix" >/dev/null
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
cc -std=c11 -Wall -Wextra -o "$tmp/app" "$top/test/outside/app.c" \
  $(pkg-config --cflags --libs gpuport-cpu) -lm -Wl,-rpath,"$tmp/prefix/lib"
"$tmp/app"
if command -v cmake >/dev/null 2>&1; then
  cmake -S "$top/test/outside" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
    -DCMAKE_BUILD_RPATH="$tmp/prefix/lib" >/dev/null
  cmake --build "$tmp/cmake" >/dev/null
  "$tmp/cmake/app"
fi
echo "outside program: ok"
