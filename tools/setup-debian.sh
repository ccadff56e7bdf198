#!/bin/sh
# Installs what building and testing gpuport needs on Debian 12 (run as root or
# with sudo). The CUDA toolkit (nvcc) is optional and not installed here: the cuda
# backend is built when nvcc is on PATH or in /usr/local/cuda.
set -e
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential pkg-config check libopenblas-dev libclang-rt-14-dev doxygen cmake valgrind \
  ${GP_SETUP_EXTRA:-} >/dev/null
echo "gpuport: build dependencies installed"
