#!/bin/sh
# Installs gpuport into a temporary prefix and builds a program outside the tree
# against it, with pkg-config and with CMake's find_package, then runs both; with Open
# MPI present, also a program against gpuport-mpi.pc.
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
if pkg-config --exists gpuport-mpi 2>/dev/null; then
  cc -std=c11 -Wall -Wextra -o "$tmp/app_mpi" "$top/test/outside/app_mpi.c" \
    $(pkg-config --cflags --libs gpuport-mpi gpuport-cpu) -lm -Wl,-rpath,"$tmp/prefix/lib"
  OMPI_MCA_btl_vader_single_copy_mechanism=none "$tmp/app_mpi"
fi
echo "outside program: ok"
