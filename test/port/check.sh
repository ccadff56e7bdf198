#!/bin/sh
# check.sh [LIBDIR] - the porting test: gpuport-port converts the six classic CUDA
# programs of this directory (plain CUDA, as written for nvcc), and each converted
# program must build against the cpu backend and pass its own check with no edit (the
# tool reports nothing unmapped for them); rules.cu checks the other rules on the
# converted text. Run from the repository root (make test does).
set -u
lib=${1:-lib}
tool=scripts/gpuport-port
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
CXX=${CXX:-g++}
fail=0

for src in vector_add reduce transpose histogram scan softmax; do
  echo "== gpuport-port test/port/$src.cu"
  if ! perl "$tool" -o "$out" "test/port/$src.cu" 2>"$out/$src.log"; then
    echo "FAIL $src: gpuport-port reports unmapped constructs:"; cat "$out/$src.log"; fail=1; continue
  fi
  grep -c '' "$out/$src.log" | sed 's/^/  notes: /'
  if ! $CXX -std=c++17 -x c++ -O2 -DGP_BUILD_CPU -Iinclude "$out/$src.cu" -o "$out/$src" \
      -L"$lib" -lgpuport-cpu -Wl,-rpath,"$(cd "$lib" && pwd)" -lm 2>"$out/$src.build"; then
    echo "FAIL $src: the converted program does not build:"; head -30 "$out/$src.build"; fail=1; continue
  fi
  if ! "$out/$src" >"$out/$src.run" 2>&1 || ! grep -q PASSED "$out/$src.run"; then
    echo "FAIL $src: the converted program does not pass:"; tail -5 "$out/$src.run"; fail=1; continue
  fi
  tail -1 "$out/$src.run" | sed 's/^/  /'
done

# Launch errors checked with cudaGetLastError / cudaPeekAtLastError (bad_launch.cu): the
# converted program builds, runs and passes as the others.
src=bad_launch
echo "== gpuport-port test/port/$src.cu"
if ! perl "$tool" -o "$out" "test/port/$src.cu" 2>"$out/$src.log"; then
  echo "FAIL $src: gpuport-port reports unmapped constructs:"; cat "$out/$src.log"; fail=1
elif ! $CXX -std=c++17 -x c++ -O2 -DGP_BUILD_CPU -Iinclude "$out/$src.cu" -o "$out/$src" \
    -L"$lib" -lgpuport-cpu -Wl,-rpath,"$(cd "$lib" && pwd)" -lm 2>"$out/$src.build"; then
  echo "FAIL $src: the converted program does not build:"; head -30 "$out/$src.build"; fail=1
elif ! "$out/$src" >"$out/$src.run" 2>&1 || ! grep -q PASSED "$out/$src.run"; then
  echo "FAIL $src: the converted program does not pass:"; tail -5 "$out/$src.run"; fail=1
else
  tail -1 "$out/$src.run" | sed 's/^/  /'
fi

# Warp-width assumptions in the shuffle programs are rewritten or flagged.
for src in reduce scan softmax; do
  grep -q 'GP_WARP_SIZE' "$out/$src.cu" || { echo "FAIL $src: no warp-width rewrite"; fail=1; }
  if grep -q '0xffffffff\|% 32\|/ 32\|& 31\|>> 5' "$out/$src.cu" 2>/dev/null; then
    grep -n '0xffffffff\|% 32\|/ 32\|& 31\|>> 5' "$out/$src.cu" | while IFS=: read -r n _; do
      grep -q "$src.cu:$n: review" "$out/$src.log" || { echo "FAIL $src:$n: a 32-lane assumption is neither rewritten nor flagged"; exit 1; }
    done || fail=1
  fi
done
grep -q 'scan.cu:36: review: literal 31' "$out/scan.log" || { echo "FAIL scan: lane == 31 not flagged"; fail=1; }

# The other rules, on rules.cu (expected to report unmapped constructs: exit 1).
echo "== gpuport-port test/port/rules.cu"
perl "$tool" -o "$out" test/port/rules.cu 2>"$out/rules.log" && { echo "FAIL rules: unmapped constructs not reported"; fail=1; }
expect() { grep -q -- "$1" "$out/rules.cu" || { echo "FAIL rules: no '$1' in the converted text"; fail=1; }; }
report() { grep -q -- "$1" "$out/rules.log" || { echo "FAIL rules: no report '$1'"; fail=1; }; }
expect '__constant__ float coeffs\[16\]; GP_SYMBOL_EXPORT(coeffs)'
expect '__device__ int counter; GP_SYMBOL_EXPORT(counter)'
expect 'GP_KERNEL void kernelDeclaredFirst(int \*out); GP_KERNEL_DECLARE(kernelDeclaredFirst);'
expect 'GP_KERNEL void __launch_bounds__(256) vote('
expect 'gp_lane_mask_t ballot = gp_ballot(in\[threadIdx.x\] > 0);'
expect 'gp_lane_mask_t half = gp_ballot_sync(0x0000ffff, in\[threadIdx.x\] > 1);'
expect '__popcll(gp_ballot(in\[threadIdx.x\] != 0))'
expect 'gp_shfl(in\[threadIdx.x\], 0, GP_WARP_SIZE)'
expect 'gp_shfl_xor_sync(0xff, 1, 1)'
expect 'gp_syncwarp();'
expect 'gp_syncwarp_mask(0xffff);'
expect 'gp_any_sync(gp_active_mask(), lane == 3)'
expect 'int lane = threadIdx.x % GP_WARP_SIZE;'
expect 'pop\[threadIdx.x / GP_WARP_SIZE\]'
expect '  gp_grid_sync();'
expect 'gp_stream_create_with_priority(&s, -1)'
expect 'gp_memcpy_to_symbol(GP_SYMBOL_REF(coeffs), h, sizeof h, 0)'
expect 'gp_memcpy_to_symbol_async(GP_SYMBOL_REF(coeffs), h, 4 \* sizeof(float), 8, s)'
expect 'gp_memcpy_from_symbol(&c0, GP_SYMBOL_REF(counter), sizeof c0, 0)'
expect 'gp_malloc_managed((void \*\*)(&d_out), 64)'
expect '(gp_device_props_init(&prop), gp_device_get_props(&prop, 0))'
expect 'prop.multiprocessor_count, prop.warp_size, prop.shared_memory_per_block'
expect 'gp_launch_cooperative(GP_KERNEL_REF(coop), dim3(2), dim3(64), 0, s, args)'
expect 'GP_LAUNCH(kernelDeclaredFirst, dim3(2, 1), dim3(32), 0, s, d_out)'
expect 'gp_event_create_with_flags(&e, GP_EVENT_DISABLE_TIMING)'
expect 'gp_event_record(e, NULL)'
expect 'gp_memcpy_2d_async(d_out, 8, h, 8, 8, 2, s)'
report 'rules.cu:6: unmapped: <cublas_v2.h>'
report 'rules.cu:16: review: __ballot_sync mask'
report 'rules.cu:19: review: __shfl_xor_sync mask'
report 'rules.cu:23: unmapped: __match_any_sync'
report 'rules.cu:47: unmapped: cudaDeviceGetAttribute'
report 'rules.cu:55: unmapped: cudaMalloc3D'
[ "$(wc -l < "$out/rules.cu")" -eq "$(wc -l < test/port/rules.cu)" ] || { echo "FAIL rules: line numbers moved"; fail=1; }

if [ $fail -eq 0 ]; then echo "port: all passed"; else echo "port: FAILED"; fi
exit $fail
