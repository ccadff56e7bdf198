# gpuport - plain Makefile.
#   make                    build every backend whose toolchain is present (cpu always)
#   make BACKEND=cpu|cuda|hip   build that backend only, and make it the default
#   make test               run the Check suites on the default backend (1 and 4 CPU
#                           devices), then again under ASan+UBSan (cpu backend)
#   make install PREFIX=... install headers, libraries, tools, pkg-config and CMake files
#   make docs               Doxygen into build/docs (zero warnings)
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

# Backends this machine can build.
AVAILABLE := cpu $(if $(NVCC),cuda) $(if $(HIPCC),hip)
# The default backend (ARCHITECTURE.md): cuda when nvcc is present and a driver
# answers, else hip when hipcc is present and a ROCm device answers, else cpu.
ifeq ($(origin BACKEND),undefined)
BACKEND := $(shell NVCC="$(NVCC)" HIPCC="$(HIPCC)" sh tools/default-backend.sh)
BACKENDS := $(AVAILABLE)
else
BACKENDS := $(BACKEND)
endif

OPENBLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null)
OPENBLAS_LIBS := $(or $(shell pkg-config --libs openblas 2>/dev/null),-lopenblas)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(or $(shell pkg-config --libs check 2>/dev/null),-lcheck -lsubunit -lrt -lm)

WARN := -Wall -Wextra $(if $(WERROR),-Werror)
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g -fPIC -fvisibility=hidden -pthread $(WARN) \
               -Iinclude -Isrc
BASE_CXXFLAGS := -std=c++17 -D_GNU_SOURCE -O2 -g -fPIC -fvisibility=hidden -pthread \
                 -fno-exceptions -fno-rtti $(WARN) -Iinclude -Isrc
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -O1

# ---- sources ---------------------------------------------------------------------
API_SRC := $(wildcard src/*.c)
CPU_SRC := $(wildcard src/cpu/*.c)
CPU_ASM := $(wildcard src/cpu/*.S)
GPU_SRC := $(wildcard src/gpu/*.c)
KERNEL_SRC := $(wildcard src/kernels/*.cu)
CUDA_KERNEL_SRC := $(wildcard cuda/*.cu)
HIP_KERNEL_SRC := $(wildcard hip/*.cu)
TOOL_SRC := $(wildcard tool/*.c)
REF_SRC := $(wildcard tool/ref*.c)
TEST_SRC := $(wildcard test/test_*.c)
TEST_KERNEL_SRC := $(wildcard test/kernels/*.cu)
TEST_HELPER_SRC := $(filter-out $(TEST_SRC),$(wildcard test/*.c))
EXAMPLE_SRC := $(wildcard examples/*.c)
EXAMPLE_KERNEL_SRC := $(wildcard examples/*.cu)

# ---- per-backend flags -----------------------------------------------------------
CFLAGS_cpu := -DGP_BUILD_CPU $(OPENBLAS_CFLAGS)
LIBS_cpu := $(OPENBLAS_LIBS) -lstdc++ -ldl -lm -pthread
CFLAGS_cuda := -DGP_BUILD_CUDA -Icuda -I$(CUDA_HOME)/include
LIBS_cuda := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lstdc++ -ldl -lm -pthread
CFLAGS_hip := -DGP_BUILD_HIP -D__HIP_PLATFORM_AMD__ -Ihip
LIBS_hip := -lamdhip64 -lstdc++ -ldl -lm -pthread

NVCC_FLAGS := -MMD -MP -x cu -std=c++17 -O3 -g -DGP_BUILD_CUDA -Iinclude -Isrc $(CUDA_GENCODE) \
              -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra $(if $(WERROR),-Werror all-warnings -Xcompiler -Werror)
HIPCC_FLAGS := -MMD -MP -x hip -std=c++17 -O3 -g -fPIC -fvisibility=hidden -DGP_BUILD_HIP -Iinclude -Isrc \
               $(addprefix --offload-arch=,$(HIP_ARCHS)) -Wall -Wextra $(if $(WERROR),-Werror)

all: $(foreach b,$(BACKENDS),backend-$(b)) bin/gpuport

# ---- one backend (objects in build/$(1)$(2), $(2) is "" or "-san") ----------------
# $(1) backend, $(2) variant suffix, $(3) extra flags
define BACKEND_RULES
B_$(1)$(2) := build/$(1)$(2)
OBJ_$(1)$(2) := $$(API_SRC:%.c=build/$(1)$(2)/%.o) \
  $(if $(filter cpu,$(1)),$$(CPU_SRC:%.c=build/$(1)$(2)/%.o) $$(CPU_ASM:%.S=build/$(1)$(2)/%.o),$$(GPU_SRC:%.c=build/$(1)$(2)/%.o)) \
  $$(KERNEL_SRC:%.cu=build/$(1)$(2)/%.cu.o) \
  $(if $(filter cuda,$(1)),$$(CUDA_KERNEL_SRC:%.cu=build/$(1)$(2)/%.cu.o)) \
  $(if $(filter hip cpu,$(1)),$$(HIP_KERNEL_SRC:%.cu=build/$(1)$(2)/%.cu.o))

build/$(1)$(2)/%.o: %.c $$(wildcard include/gpuport/*.h) $$(wildcard src/*.h src/*/*.h)
	@mkdir -p $$(@D)
	$$(CC) -MMD -MP $$(BASE_CFLAGS) $$(CFLAGS_$(1)) $(3) -c $$< -o $$@

build/$(1)$(2)/%.o: %.S
	@mkdir -p $$(@D)
	$$(CC) -MMD -MP $$(BASE_CFLAGS) $$(CFLAGS_$(1)) $(3) -c $$< -o $$@

build/$(1)$(2)/%.cu.o: %.cu $$(wildcard include/gpuport/*.h) $$(wildcard src/*.h src/*/*.h)
	@mkdir -p $$(@D)
	$(if $(filter cpu,$(1)),$$(CXX) -MMD -MP -x c++ $$(BASE_CXXFLAGS) $$(CFLAGS_cpu) $(3),$(if $(filter cuda,$(1)),$$(NVCC) $$(NVCC_FLAGS),$$(HIPCC) $$(HIPCC_FLAGS))) -c $$< -o $$@

build/$(1)$(2)/libgpuport-$(1).a: $$(OBJ_$(1)$(2))
	@mkdir -p $$(@D)
	rm -f $$@ && ar rcs $$@ $$^
endef

$(foreach b,cpu cuda hip,$(eval $(call BACKEND_RULES,$(b),,)))
$(eval $(call BACKEND_RULES,cpu,-san,$(SAN_FLAGS)))

# Libraries, the tool, examples and tests of each (non-sanitizer) backend.
define BACKEND_OUTPUTS
lib/libgpuport-$(1).a: build/$(1)/libgpuport-$(1).a
	@mkdir -p lib && cp $$< $$@

lib/libgpuport-$(1).so.$(VERSION): $$(OBJ_$(1)) tools/exports.sh
	@mkdir -p lib
	$$(CC) -shared -Wl,-soname,libgpuport-$(1).so.$(VERSION_MAJOR) -Wl,--no-undefined -o $$@ $$(OBJ_$(1)) $$(LIBS_$(1))
	ln -sf libgpuport-$(1).so.$(VERSION) lib/libgpuport-$(1).so.$(VERSION_MAJOR)
	ln -sf libgpuport-$(1).so.$(VERSION_MAJOR) lib/libgpuport-$(1).so

bin/gpuport-$(1): $$(TOOL_SRC) $$(wildcard tool/*.h) lib/libgpuport-$(1).so.$(VERSION)
	@mkdir -p bin
	$$(CC) $$(BASE_CFLAGS) $$(CFLAGS_$(1)) -fvisibility=default -Itool $$(TOOL_SRC) -o $$@ -Llib -lgpuport-$(1) -Wl,-rpath,'$$$$ORIGIN/../lib' -lm -pthread

backend-$(1): lib/libgpuport-$(1).a lib/libgpuport-$(1).so.$(VERSION) bin/gpuport-$(1) tests-$(1) examples-$(1)
endef
$(foreach b,cpu cuda hip,$(eval $(call BACKEND_OUTPUTS,$(b))))

bin/gpuport: bin/gpuport-$(BACKEND)
	ln -sf gpuport-$(BACKEND) $@

# ---- tests (linked statically, so suites may reach internal functions) --------------
# $(1) backend, $(2) variant, $(3) extra flags
define TEST_RULES
TEST_BIN_$(1)$(2) := $$(TEST_SRC:test/%.c=build/$(1)$(2)/test/%)
TEST_KOBJ_$(1)$(2) := $$(TEST_KERNEL_SRC:%.cu=build/$(1)$(2)/%.cu.o)
TEST_HOBJ_$(1)$(2) := $$(TEST_HELPER_SRC:%.c=build/$(1)$(2)/%.o) $$(REF_SRC:%.c=build/$(1)$(2)/%.o)
build/$(1)$(2)/test/%: test/%.c $$(TEST_KOBJ_$(1)$(2)) $$(TEST_HOBJ_$(1)$(2)) build/$(1)$(2)/libgpuport-$(1).a $$(wildcard test/*.h tool/*.h)
	@mkdir -p $$(@D)
	$$(CC) $$(BASE_CFLAGS) $$(CFLAGS_$(1)) $(3) $$(CHECK_CFLAGS) -Itool -Itest $$< $$(TEST_KOBJ_$(1)$(2)) $$(TEST_HOBJ_$(1)$(2)) -o $$@ \
	  build/$(1)$(2)/libgpuport-$(1).a $$(LIBS_$(1)) $$(CHECK_LIBS)
tests-$(1)$(2): $$(TEST_BIN_$(1)$(2))
endef
$(foreach b,cpu cuda hip,$(eval $(call TEST_RULES,$(b),,)))
$(eval $(call TEST_RULES,cpu,-san,$(SAN_FLAGS)))

# ---- examples ----------------------------------------------------------------------
define EXAMPLE_RULES
EX_KOBJ_$(1) := $$(EXAMPLE_KERNEL_SRC:%.cu=build/$(1)/%.cu.o)
EX_BIN_$(1) := $$(EXAMPLE_SRC:examples/%.c=bin/examples-$(1)/%)
bin/examples-$(1)/%: examples/%.c $$(EX_KOBJ_$(1)) lib/libgpuport-$(1).so.$(VERSION)
	@mkdir -p $$(@D)
	$$(CC) $$(BASE_CFLAGS) -fvisibility=default $$< $$(EX_KOBJ_$(1)) -o $$@ -Llib -lgpuport-$(1) -Wl,-rpath,'$$$$ORIGIN/../../lib' $$(LIBS_$(1))
examples-$(1): $$(EX_BIN_$(1))
endef
$(foreach b,cpu cuda hip,$(eval $(call EXAMPLE_RULES,$(b))))

# ---- running the tests ---------------------------------------------------------------
# Every suite on the default backend with 1 and 4 virtual CPU devices, then the cpu
# backend under ASan+UBSan. GPU builds skip at run time when no device answers.
test: backend-$(BACKEND) tests-cpu-san bin/gpuport
	BACKEND=$(BACKEND) sh test/run.sh build/$(BACKEND)/test bin/gpuport-$(BACKEND)
	BACKEND=cpu SAN=1 sh test/run.sh build/cpu-san/test

check: test

# ---- install: headers, libraries, tools, pkg-config and CMake package files ----------
# The .pc files are written at install time, so they carry the PREFIX installed to.
PC_SED = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@BACKEND@|$(1)|g' \
              -e 's|@LIBS_PRIVATE@|$(LIBS_$(1))|g' pkgconfig/gpuport-backend.pc.in
install: all
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
	$(foreach b,$(BACKENDS),$(call PC_SED,$(b)) > $(DESTDIR)$(PREFIX)/lib/pkgconfig/gpuport-$(b).pc;)
	$(call PC_SED,$(BACKEND)) | sed -e 's|^Name: .*|Name: gpuport|' > $(DESTDIR)$(PREFIX)/lib/pkgconfig/gpuport.pc
	ln -sf gpuport-$(BACKEND) $(DESTDIR)$(PREFIX)/bin/gpuport
	sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@VERSION_MAJOR@|$(VERSION_MAJOR)|g' -e 's|@BACKENDS@|$(BACKENDS)|g' -e 's|@DEFAULT@|$(BACKEND)|g' \
	  pkgconfig/gpuportConfig.cmake.in > $(DESTDIR)$(PREFIX)/lib/cmake/gpuport/gpuportConfig.cmake
	sed -e 's|@VERSION@|$(VERSION)|g' pkgconfig/gpuportConfigVersion.cmake.in \
	  > $(DESTDIR)$(PREFIX)/lib/cmake/gpuport/gpuportConfigVersion.cmake

docs:
	@mkdir -p build/docs
	doxygen docs/Doxyfile 2> build/docs/warnings.log; cat build/docs/warnings.log; \
	  test ! -s build/docs/warnings.log

# The AMD kernels (hip/*.cu) built for each HIP_ARCHS target: no scratch or VGPR spills
# in hipcc's resource-usage remarks, v_mfma in every kernel's code (KERNELS.md).
check-hip-kernels:
	HIPCC="$(HIPCC)" HIP_ARCHS="$(HIP_ARCHS)" sh tools/hip-kernel-check.sh build/hip-check

# Exported symbols of each shared library: only gp_ and the versioned executor ABI.
check-exports: $(foreach b,$(BACKENDS),lib/libgpuport-$(b).so.$(VERSION))
	sh tools/exports.sh $^

clean:
	rm -rf build lib bin

-include $(shell find build -name '*.d' 2>/dev/null)

.PHONY: all test check install docs clean check-exports check-hip-kernels \
        $(foreach b,cpu cuda hip,backend-$(b) tests-$(b) examples-$(b)) tests-cpu-san
