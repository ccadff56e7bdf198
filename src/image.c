/*
 * image.c - recognising code images before a loader sees them (src/module.h).
 *
 * dlopen, cudaLibraryLoadData and hipModuleLoadData all trust their input: given a
 * truncated shared object dlopen maps it and the process faults (SIGBUS) when the
 * missing part is touched, and cudaLibraryLoadData is not even told the image's size.
 * So the image's kind is identified from its first bytes (ELF and its machine, fatbin,
 * clang offload bundle, PTX text), a kind this backend does not load is refused with a
 * message saying what it is, and an ELF image must contain what its headers describe.
 */
#include <elf.h>
#include <link.h>
#include <string.h>
#include "module.h"

#ifndef EM_CUDA
#define EM_CUDA 190
#endif
#ifndef EM_AMDGPU
#define EM_AMDGPU 224
#endif
#if defined(__x86_64__)
#define GP__HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define GP__HOST_MACHINE EM_AARCH64
#elif defined(__powerpc64__)
#define GP__HOST_MACHINE EM_PPC64
#else
#define GP__HOST_MACHINE EM_NONE /* not checked */
#endif

typedef enum image_kind {
  IMG_UNKNOWN, IMG_HOST_SO, IMG_HOST_OTHER, IMG_CUBIN, IMG_AMDGPU, IMG_ELF_OTHER, IMG_FATBIN,
  IMG_BUNDLE, IMG_PTX
} image_kind_t;

static const char *const g_kind_names[] = {
    "not a code image gpuport knows", "a shared object for this machine",
    "an ELF file for this machine that is not a shared object (build it with -shared -fPIC)",
    "a CUDA cubin", "an AMD GPU code object", "an ELF file for another machine",
    "a CUDA fatbin", "a clang offload bundle (HIP)", "PTX text"};

#define FATBIN_MAGIC 0xba55ed50u

static bool looks_like_ptx(const unsigned char *p, size_t n) {
  size_t lim = n < 4096 ? n : 4096;
  for (size_t i = 0; i + 8 <= lim; i++)
    if (memcmp(p + i, ".version", 8) == 0 || memcmp(p + i, ".target ", 8) == 0) return true;
  return false;
}

static image_kind_t classify(const unsigned char *p, size_t n) {
  if (n >= SELFMAG && memcmp(p, ELFMAG, SELFMAG) == 0) {
    if (n < EI_NIDENT + 4) return IMG_ELF_OTHER;
    uint16_t machine, type;
    memcpy(&type, p + 16, 2); /* e_type and e_machine: the same offsets in both classes */
    memcpy(&machine, p + 18, 2);
    if (machine == EM_CUDA) return IMG_CUBIN;
    if (machine == EM_AMDGPU) return IMG_AMDGPU;
    const int cls = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
    if (p[EI_CLASS] == cls && (GP__HOST_MACHINE == EM_NONE || machine == GP__HOST_MACHINE))
      return type == ET_DYN ? IMG_HOST_SO : IMG_HOST_OTHER;
    return IMG_ELF_OTHER;
  }
  uint32_t magic = 0;
  if (n >= 4) memcpy(&magic, p, 4);
  if (magic == FATBIN_MAGIC) return IMG_FATBIN;
  if (n >= 24 && memcmp(p, "__CLANG_OFFLOAD_BUNDLE__", 24) == 0) return IMG_BUNDLE;
  if (n >= 4 && memcmp(p, "CCOB", 4) == 0) return IMG_BUNDLE; /* compressed (ROCm 6) */
  if (looks_like_ptx(p, n)) return IMG_PTX;
  return IMG_UNKNOWN;
}

/* The segments and section table of a 64-bit ELF image lie within its n bytes. */
static bool elf64_within(const unsigned char *p, size_t n) {
  if (p[EI_CLASS] != ELFCLASS64) return true; /* 32-bit images are not checked */
  if (n < sizeof(Elf64_Ehdr)) return false;
  Elf64_Ehdr h;
  memcpy(&h, p, sizeof h);
  if (h.e_phnum > 0) {
    if (h.e_phentsize != sizeof(Elf64_Phdr) || h.e_phoff > n ||
        (n - h.e_phoff) / sizeof(Elf64_Phdr) < h.e_phnum)
      return false;
    for (int i = 0; i < h.e_phnum; i++) {
      Elf64_Phdr ph;
      memcpy(&ph, p + h.e_phoff + (size_t)i * sizeof ph, sizeof ph);
      if ((ph.p_type == PT_LOAD || ph.p_type == PT_DYNAMIC) &&
          (ph.p_offset > n || ph.p_filesz > n - ph.p_offset))
        return false;
    }
  }
  if (h.e_shoff != 0) {
    if (h.e_shentsize != sizeof(Elf64_Shdr) || h.e_shoff > n ||
        (n - h.e_shoff) / sizeof(Elf64_Shdr) < h.e_shnum)
      return false;
    for (int i = 0; i < h.e_shnum; i++) {
      Elf64_Shdr sh;
      memcpy(&sh, p + h.e_shoff + (size_t)i * sizeof sh, sizeof sh);
      if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > n || sh.sh_size > n - sh.sh_offset))
        return false;
    }
  }
  return true;
}

/* A fatbin's header gives its size: {magic, version (16 bits), header size (16 bits),
 * size of what follows (64 bits)}. */
static bool fatbin_within(const unsigned char *p, size_t n) {
  if (n < 16) return false;
  uint16_t header;
  uint64_t body;
  memcpy(&header, p + 6, 2);
  memcpy(&body, p + 8, 8);
  return header <= n && body <= n - header;
}

static bool kind_accepted(image_kind_t k) {
  switch (GP__BACKEND) {
    case GP_BACKEND_CUDA: return k == IMG_CUBIN || k == IMG_FATBIN || k == IMG_PTX;
    case GP_BACKEND_HIP: return k == IMG_AMDGPU || k == IMG_BUNDLE;
    default: return k == IMG_HOST_SO;
  }
}

static const char *backend_takes(void) {
  switch (GP__BACKEND) {
    case GP_BACKEND_CUDA: return "the cuda backend loads cubins, fatbins and PTX";
    case GP_BACKEND_HIP: return "the hip backend loads AMD GPU code objects and offload bundles";
    default: return "the cpu backend loads shared objects built from dialect sources";
  }
}

gp_status_t gp__image_check(const void *image, size_t n, const char *func, const char *what) {
  const unsigned char *p = image;
  image_kind_t k = classify(p, n);
  if (!kind_accepted(k))
    return gp__error(GP_ERROR_INVALID_IMAGE, func, "%s is %s: %s", what, g_kind_names[k],
                     backend_takes());
  bool whole = true;
  if (k == IMG_PTX) whole = memchr(p, '\0', n) != NULL;
  if (k == IMG_FATBIN) whole = fatbin_within(p, n);
  if (k == IMG_HOST_SO || k == IMG_CUBIN || k == IMG_AMDGPU) whole = elf64_within(p, n);
  if (!whole)
    return gp__error(GP_ERROR_INVALID_IMAGE, func,
                     k == IMG_PTX ? "%s is PTX text without its terminating NUL within %zu bytes"
                                  : "%s cannot be loaded: it is truncated or corrupt (its headers "
                                    "describe data past its %zu bytes)",
                     what, n);
  return GP_SUCCESS;
}
