#!/bin/sh
# check.sh [LIBDIR] - the porting test: gpuport-port converts the six classic CUDA
# programs of this directory (plain CUDA, as written for nvcc), user_names.cu,
# code_first.cu (NULL before its first #include), stream_callback.cu (device flags, a
# stream callback, mapped memory, the default memory pool), graph_names.cu (capture and
# graph names: the converted text),
# include_order.cu (with its own helper_cuda.h) and
# uses_header.cu (with kernels.cuh), launch_forms.cu; each converted program must port with the exit
# status expected (0 clean, 1 notes to review), build with scripts/gpuport-cc against
# the cpu backend at warp widths 32 and 64 and pass its own check at both
# (GP_CPU_WARP_SIZE=32 and 64) with no edit. rules.cu, templates.cu and
# width_errors.cu check the other rules on the converted text, the reports and the exit
# status (2: something could not be mapped). Run from the repository root (make test
# does); LIBDIR is where libgpuport-cpu.so is (default lib, the tree's).
set -u
lib=${1:-lib}
tool=scripts/gpuport-port
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0

# port EXPECTED_STATUS LOG FILE...: converts FILE... into $out.
port() {
  want=$1 log=$2
  shift 2
  perl "$tool" -o "$out" "$@" 2>"$out/$log.log"
  got=$?
  [ "$got" -eq "$want" ] || { echo "FAIL $log: gpuport-port exit status $got, expected $want:"; grep -v rewrote: "$out/$log.log"; fail=1; return 1; }
}

# build_run NAME: builds $out/NAME.cu at both widths and runs it at both.
build_run() {
  if ! GPUPORT_LIBDIR="$lib" scripts/gpuport-cc -O1 -o "$out/$1" "$out/$1.cu" 2>"$out/$1.build"; then
    echo "FAIL $1: the converted program does not build:"; head -30 "$out/$1.build"; fail=1; return
  fi
  for w in 32 64; do
    if ! GP_CPU_WARP_SIZE=$w "$out/$1" >"$out/$1.run" 2>&1 || ! grep -q PASSED "$out/$1.run"; then
      echo "FAIL $1: the converted program does not pass at warp width $w:"; tail -5 "$out/$1.run"; fail=1; continue
    fi
    tail -1 "$out/$1.run" | sed "s/^/  width $w: /"
  done
}

for src in vector_add reduce transpose histogram scan softmax user_names code_first stream_callback; do
  echo "== gpuport-port test/port/$src.cu"
  want=0
  [ $src = scan ] && want=1 # the dynamic shared memory size counts 32-lane warps (review)
  port $want $src "test/port/$src.cu" || continue
  grep -c '' "$out/$src.log" | sed 's/^/  notes: /'
  build_run $src
done
echo "== gpuport-port test/port/helper_cuda.h test/port/include_order.cu"
port 1 include_order test/port/helper_cuda.h test/port/include_order.cu && build_run include_order
grep -q '^#include <gpuport/kernel.h>$' "$out/helper_cuda.h" || { echo "FAIL helper_cuda.h: a header naming cudaError_t does not include the dialect"; fail=1; }
grep -q '^#include <gpuport/half.h>$' "$out/helper_cuda.h" || { echo "FAIL helper_cuda.h: a header naming bfloat16 does not include gpuport/half.h"; fail=1; }
echo "== gpuport-port test/port/kernels.cuh test/port/uses_header.cu"
port 0 uses_header test/port/kernels.cuh test/port/uses_header.cu && build_run uses_header

# Launch errors checked with cudaGetLastError / cudaPeekAtLastError (bad_launch.cu): the
# converted program builds, runs and passes as the others.
echo "== gpuport-port test/port/bad_launch.cu"
port 0 bad_launch test/port/bad_launch.cu && build_run bad_launch

# Launch forms beyond <<<>>> of a kernel (launch_forms.cu): deduced template arguments,
# kernel pointers, extern "C" kernels; 1: the aggregate's __shfl_sync mask is reviewed.
echo "== gpuport-port test/port/launch_forms.cu"
port 1 launch_forms test/port/launch_forms.cu && build_run launch_forms
grep -q 'gp_launch_ptr(kernel, blocks, threads, 0, NULL, d_out, d_in, n)' "$out/launch_forms.cu" || { echo "FAIL launch_forms: the kernel pointer launch is not gp_launch_ptr"; fail=1; }

# Warp-width assumptions in the shuffle programs are rewritten or flagged.
for src in reduce scan softmax; do
  grep -q 'GP_WARP_SIZE' "$out/$src.cu" || { echo "FAIL $src: no warp-width rewrite"; fail=1; }
  if grep -q '0xffffffff\|% 32\|/ 32\|& 31\|>> 5' "$out/$src.cu" 2>/dev/null; then
    grep -n '0xffffffff\|% 32\|/ 32\|& 31\|>> 5' "$out/$src.cu" | while IFS=: read -r n _; do
      grep -q "$src.cu:$n: review" "$out/$src.log" || { echo "FAIL $src:$n: a 32-lane assumption is neither rewritten nor flagged"; exit 1; }
    done || fail=1
  fi
done
grep -q 'scan.cu:58: review: literal 32 in the dynamic shared memory size of scanBlocks' "$out/scan.log" || { echo "FAIL scan: BLOCK / 32 not flagged"; fail=1; }
grep -q 'lane == GP_WARP_SIZE - 1' "$out/scan.cu" || { echo "FAIL scan: lane == 31 not rewritten"; fail=1; }

# user_names.cu: the program's own cuda/CUDA_ names are not reported; the rest rewritten.
if grep -q 'unmapped\|review' "$out/user_names.log"; then echo "FAIL user_names: notes on names the program defines:"; grep 'unmapped\|review' "$out/user_names.log"; fail=1; fi
un() { grep -q -- "$1" "$out/user_names.cu" || { echo "FAIL user_names: no '$1' in the converted text"; fail=1; }; }
un '#define WARP_SIZE GP_WARP_SIZE'
un '#define FULL GP_FULL_MASK'
un '^constexpr int kWarpSize = GP_WARP_SIZE;$'
un '^  int warp = threadIdx.x / kWarpSize;$'
un '^  $'
un '__popcll(live) == warpSize'
un '#if 1 /\* ifdef __CUDACC__'
un '^GP_KERNEL void fill(int \*out, int n, int value = 7) {'
un '^GP_KERNEL void scale(float \*x, int n, Scale s) {'
un '__device__ float apply(float x) const'
un '(void)(\*(&x\[i\]) = (s.apply((\*(&x\[i\])))))'
un 'GP_DEVICE gp_lane_mask_t oddLanes(int v) { return gp_ballot(v & 1); }'
un 'gp_lane_mask_t odd = oddLanes(v);'
un 'gp_lane_mask_t odd2 = gp_ballot(v & 1);'
un 'gp_lane_mask_t live;'
un '__popcll(odd & ((1ull << lane) - 1))'
un '63 - __clzll(odd)'
un 's += gp_shfl_xor(s, o);'
un 'if (lane == GP_WARP_SIZE - 1)'
un 'GP_KERNEL void addOne_kernel(int \*x, int n)'
un 'GP_KERNEL_EXPORT(addOne_kernel)'
un 'GP_LAUNCH(addOne_kernel, (n + threads - 1) / threads, threads, 0, NULL, x, n)'
un 'GP_LAUNCH(fill, (n + 255) / 256, 256, 0, NULL, d, n, 7)'
un 'cudaCheck(gp_device_set(ctx.cudaDeviceID))'
un 'int cudaDeviceID;'
grep -q 'static static' "$out/user_names.cu" && { echo "FAIL user_names: static static"; fail=1; }
grep -q -- '#include <gpuport/kernel.h> // kernels.cuh' "$out/kernels.cuh" || { echo "FAIL kernels.cuh: no dialect include on line 1"; fail=1; }
grep -q 'unmapped' "$out/uses_header.log" && { echo "FAIL uses_header: the header's kernel is not known"; fail=1; }

# The other rules, on rules.cu (exit 2: it has constructs gpuport does not map).
echo "== gpuport-port test/port/rules.cu"
port 2 rules test/port/rules.cu
expect() { grep -q -- "$1" "$out/$2.cu" || { echo "FAIL $2: no '$1' in the converted text"; fail=1; }; }
report() { grep -q -- "$1" "$out/$2.log" || { echo "FAIL $2: no report '$1'"; fail=1; }; }
for e in '__constant__ float coeffs\[16\]; GP_SYMBOL_EXPORT(coeffs)' \
  'static __device__ int counter; GP_SYMBOL_EXPORT(counter)' \
  'GP_KERNEL void kernelDeclaredFirst(int \*out); GP_KERNEL_DECLARE(kernelDeclaredFirst);' \
  'GP_KERNEL void __launch_bounds__(256) vote(' \
  'gp_lane_mask_t ballot = gp_ballot(in\[threadIdx.x\] > 0);' \
  'gp_lane_mask_t half = gp_ballot_sync(0x0000ffff, in\[threadIdx.x\] > 1);' \
  '__popcll(gp_ballot(in\[threadIdx.x\] != 0))' \
  'gp_shfl(in\[threadIdx.x\], 0, GP_WARP_SIZE)' \
  'gp_shfl_xor_sync(0xff, 1, 1)' \
  'gp_syncwarp();' \
  'gp_syncwarp_mask(0xffff);' \
  'gp_any_sync(gp_active_mask(), lane == 3)' \
  'int lane = threadIdx.x % GP_WARP_SIZE;' \
  'pop\[threadIdx.x / GP_WARP_SIZE\]' \
  '  gp_grid_sync();' \
  'namespace cg = gp_cg;' \
  '#include <gpuport/cooperative_groups.h>' \
  '#include <gpuport/blas.h>' \
  'gp_stream_create_with_priority(&s, -1)' \
  'gp_memcpy_to_symbol(GP_SYMBOL_REF(coeffs), h, sizeof h, 0)' \
  'gp_memcpy_to_symbol_async(GP_SYMBOL_REF(coeffs), h, 4 \* sizeof(float), 8, s)' \
  'gp_memcpy_from_symbol(&c0, GP_SYMBOL_REF(counter), sizeof c0, 0)' \
  'gp_malloc_managed((void \*\*)(&d_out), 64)' \
  '(gp_device_props_init(&prop), gp_device_get_props(&prop, 0))' \
  'prop.multiprocessor_count, prop.warp_size, prop.shared_memory_per_block' \
  'gp_device_get_attribute(&value, GP_DEVICE_ATTR_MULTI_PROCESSOR_COUNT, 0)' \
  'gp_launch_cooperative(GP_KERNEL_REF(coop), dim3(2), dim3(64), 0, s, args)' \
  'GP_LAUNCH(kernelDeclaredFirst, dim3(2, 1), dim3(32), 0, s, d_out)' \
  'gp_event_create_with_flags(&e, GP_EVENT_DISABLE_TIMING)' \
  'gp_event_record(e, NULL)' \
  'gp_memcpy_2d_async(d_out, 8, h, 8, 8, 2, s)' \
  'gp_malloc((void \*\*)(p), 4);'; do expect "$e" rules; done
echo "== gpuport-port test/port/graph_names.cu"
port 0 graph_names test/port/graph_names.cu
for e in 'gp_stream_begin_capture(s, GP_CAPTURE_MODE_RELAXED)' \
  'gp_capture_status_t st;' \
  'if (st == GP_CAPTURE_STATUS_ACTIVE)' \
  'gp_graph_get_nodes(g, NULL, &n)' \
  'gp_graph_node_type_t t = GP_GRAPH_NODE_TYPE_MEMSET;' \
  'gp_graph_exec_update_result_t r = GP_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;'; do expect "$e" graph_names; done
grep -q 'cuda_runtime\|cublas_v2\|<cooperative_groups' "$out/rules.cu" && { echo "FAIL rules: a CUDA header is kept"; fail=1; }
report 'rules.cu:16: review: __ballot_sync mask' rules
report 'rules.cu:19: review: __shfl_xor_sync mask' rules
report 'rules.cu:23: review: __match_all_sync mask' rules
expect 'gp_lane_mask_t same; same = gp_match_any(lane); out\[0\] += __popcll(same) + gp_match_all_sync(0xff, lane, &lane);' rules
report 'rules.cu:55: unmapped: cudaMalloc3D' rules
# CUDA's warp reductions map to the dialect's, with 64-bit masks (the full one is every
# lane at either width); a mask name is full only where its nearest declaration says so.
for e in 'out\[threadIdx.x\] = gp_reduce_add_sync(GP_FULL_MASK, in\[threadIdx.x\]);' \
  'out\[threadIdx.x\] += gp_reduce_max_sync(odd, (unsigned)in\[threadIdx.x\]);' \
  'out\[threadIdx.x\] = gp_shfl(out\[threadIdx.x\], 0);' \
  'out\[threadIdx.x\] = gp_shfl_up_sync(mask, out\[threadIdx.x\], 1, 8);'; do expect "$e" rules; done
report 'rules.cu:71: review: __reduce_max_sync mask' rules
report 'rules.cu:81: review: __shfl_up_sync mask' rules
grep -q 'unmapped: __reduce' "$out/rules.log" && { echo "FAIL rules: __reduce_*_sync reported unmapped"; fail=1; }
expect '^  gp_device_props_t p;$' rules
report 'rules.cu:93: review: __shared__ first: kept as __shared__' rules
expect '^  gp_kernel_attributes_t fa;$' rules

# Templates, cooperative groups, half precision, cuBLAS, the profiler, the runtime
# names added with the attribute, occupancy and graph calls (exit 1: notes to review).
echo "== gpuport-port test/port/templates.cu"
port 1 templates test/port/templates.cu
for e in '^#include <gpuport/kernel.h>$' '^#include <gpuport/half.h>$' '^#include <gpuport/cooperative_groups.h>$' \
  '^#include <gpuport/blas.h>$' '^#include <gpuport/graph.h>$' '^namespace cg = gp_cg;$' '^using namespace gp_cg;$' \
  '^template <typename T, int BLOCK>$' '^GP_KERNEL_TEMPLATE void blockSum(const T \*in, T \*out, int n) {$' \
  'cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);' \
  '^}$' 'GP_KERNEL void toHalf(const float \*in, __half \*out, int n)' 'out\[i\] = __float2half(in\[i\]);' \
  'case 512: GP_LAUNCH((blockSum<float, 512>), 1, 512, 0, st, in, out, n); break;' \
  'default: GP_LAUNCH((blockSum<float, 128>), 1, 128, 0, NULL, in, out, n); break;' \
  'gp_stream_t handle;' '^  \*(&handle) = NULL;$' '^  (handle) = (st);$' \
  'gp_gemm(handle, GP_COL_MAJOR, GP_OP_N, GP_OP_T, 8, 8, 8, \*(&alpha), a, GP_F32, 8, b, GP_F32, 8, \*(&beta), c, GP_F32, 8);' \
  'gp_device_get_attribute(&value, GP_DEVICE_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0);' \
  'gp_device_get_attribute(&value, GP_DEVICE_ATTR_L2_CACHE_SIZE, 0);' \
  'gp_occupancy_max_potential_block_size(&minGrid, &blockSize, GP_KERNEL_REF(toHalf), 0, 0);' \
  'gp_kernel_attributes_t attr;' 'gp_kernel_get_attributes(&attr, GP_KERNEL_REF(toHalf)); int most = attr.max_threads_per_block + attr.num_regs;' \
  'gp_host_register_flags(a, 64, GP_HOST_REGISTER_MAPPED);' 'gp_host_get_device_pointer((void \*\*)(&da), a, 0);' \
  'gp_host_alloc((void \*\*)(&h), 64, GP_HOST_ALLOC_MAPPED | GP_HOST_ALLOC_PORTABLE);' \
  '^  gp_stream_t lt;$' '^  \*(&lt) = NULL;$' \
  '^  gp_compute_t compute = GP_COMPUTE_TF32;$' '^  gp_compute_t mode = GP_COMPUTE_F32;$' '^  (void)(mode);$'; do expect "$e" templates; done
grep -q 'GP_KERNEL_EXPORT(blockSum\|cuda\|cublas\|cooperative_groups::' "$out/templates.cu" && { echo "FAIL templates: CUDA left or a template exported"; fail=1; }
report 'templates.cu:63: review: extern __device__ sharedCounter: needs relocatable device code' templates
expect '^extern __device__ int sharedCounter;$' templates
report 'templates.cu:80: review: cublasSetMathMode: dropped' templates
report 'templates.cu:73: review: kernel node parameters: toHalf' templates
for e in '  gp_graph_node_t node;' '  gp_kernel_node_params_t prm = {};' '  gp_graph_create(&g, 0);' \
  '  gp_graph_add_kernel_node(&node, g, NULL, 0, &prm);'; do expect "$e" templates; done
expect '^  __device__ void add(int v) { atomicAdd(&sharedCounter, v + n); }$' templates

# Width-64 bugs that cannot be rewritten for certain, and what cannot be mapped: exit 2.
echo "== gpuport-port test/port/width_errors.cu"
port 2 width_errors test/port/width_errors.cu
expect '^  gp_launch_ptr(k, 1, 64, 0, NULL, o);$' width_errors
for r in 'width_errors.cu:33: unmapped: literal 32 in the grid of rowSums' \
  'width_errors.cu:34: unmapped: WARP_SIZE in host code' \
  'width_errors.cu:35: unmapped: literal 32 in the block of leader' \
  'width_errors.cu:38: unmapped: cudaMemPrefetchAsync' \
  'width_errors.cu:44: unmapped: literal 32 in the block of rowSums' \
  'width_errors.cu:47: unmapped: __managed__ variable' \
  'width_errors.cu:20: unmapped: a holds a lane mask but is declared unsigned with other variables' \
  'width_errors.cu:21: unmapped: __clz of a 64-bit lane mask' \
  'width_errors.cu:6: unmapped: MASK32 is 0xffffffff' \
  'width_errors.cu:59: unmapped: warp_size = 32 in host code' \
  'width_errors.cu:60: unmapped: literal 32 passed to scanRows as width, the width of its shuffles'; do report "$r" width_errors; done
[ "$(grep -c unmapped "$out/width_errors.log")" -eq 11 ] || { echo "FAIL width_errors: unexpected reports:"; grep unmapped "$out/width_errors.log"; fail=1; }

for f in rules templates width_errors user_names; do
  [ "$(wc -l < "$out/$f.cu")" -eq "$(wc -l < "test/port/$f.cu")" ] || { echo "FAIL $f: line numbers moved"; fail=1; }
done
perl "$tool" --bogus 2>/dev/null; [ $? -eq 64 ] || { echo "FAIL: a usage error does not exit 64"; fail=1; }

if [ $fail -eq 0 ]; then echo "port: all passed"; else echo "port: FAILED"; fi
exit $fail
