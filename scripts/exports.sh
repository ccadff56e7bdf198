#!/bin/sh
# Fails when a shared library exports a symbol outside the public API: gp_* functions
# and, for kernels and the CPU executor ABI, gp__kernel_* descriptors, gp__cpu_* and the
# descriptor registration gp__abi_* (gpuport/kernel_abi.h).
status=0
for lib in "$@"; do
  bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v -E '^(gp_|gp__kernel_|gp__cpu_|gp__abi_|_init$|_fini$|_edata$|_end$|__bss_start$)' | grep -v '^$')
  if [ -n "$bad" ]; then echo "$lib exports non-API symbols:"; echo "$bad" | head -20; status=1; fi
done
exit $status
