#!/bin/sh
# Prints the default backend (docs/design/ARCHITECTURE.md "Backends"): cuda when nvcc is
# present and an NVIDIA driver answers, else hip when hipcc is present and a ROCm GPU
# answers, else cpu.
if [ -n "$NVCC" ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo cuda
elif [ -n "$HIPCC" ] && command -v rocminfo >/dev/null 2>&1 && rocminfo 2>/dev/null | grep -q 'gfx[0-9]'; then
  echo hip
else
  echo cpu
fi
