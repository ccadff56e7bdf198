/*
 * image.c - recognising code images before a loader sees them, and reading them from
 * files (src/module.h).
 *
 * dlopen, cudaLibraryLoadData and hipModuleLoadData all trust their input: given a
 * truncated shared object dlopen maps it and the process faults (SIGBUS) when the
 * missing part is touched; given a dynamic section whose string table points elsewhere
 * it reads wherever that is; cudaLibraryLoadData and hipModuleLoadData are not even
 * told the image's size (they read what its headers claim). So the image's kind is
 * identified from its first bytes (ELF and its machine, fatbin, clang offload bundle,
 * PTX text), a kind this backend does not load is refused with a message saying what it
 * is, and everything a loader reads before it runs any code is checked to lie within
 * the image's real size:
 *   - a host shared object (the cpu backend's dlopen): the ELF header, the program
 *     headers (loadable segments in ascending, non-overlapping order, file-backed parts
 *     inside the file, the mmap alignment rule), the notes, the dynamic section and
 *     every table it names (strings, symbols and their hash tables, relocations and the
 *     addresses they write, init and fini arrays, symbol versions), and the section
 *     header table (System V gABI, "Object Files" and "Program Loading and Dynamic
 *     Linking"; the x86-64 and AArch64 psABIs for relocations);
 *   - a GPU ELF (cubin, AMD code object): header, program and section tables within the
 *     file;
 *   - a fatbin: its header's size; a clang offload bundle: every entry's header, triple
 *     and code object; a compressed bundle (CCOB): its header and recorded file size
 *     (clang's OffloadBundler format, versions 1 to 3).
 * This is not a sandbox: a well-formed shared object runs its constructors when loaded
 * (gpuport/module.h says so); the checks only keep a corrupt file from faulting the
 * loader.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
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
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define GP__HOST_DATA ELFDATA2LSB
#else
#define GP__HOST_DATA ELFDATA2MSB
#endif

typedef enum image_kind {
  IMG_UNKNOWN, IMG_HOST_SO, IMG_HOST_OTHER, IMG_CUBIN, IMG_AMDGPU, IMG_ELF_OTHER, IMG_FATBIN,
  IMG_BUNDLE, IMG_CCOB, IMG_PTX
} image_kind_t;

static const char *const g_kind_names[] = {
    "not a code image gpuport knows", "a shared object for this machine",
    "an ELF file for this machine that is not a shared object (build it with -shared -fPIC)",
    "a CUDA cubin", "an AMD GPU code object", "an ELF file for another machine",
    "a CUDA fatbin", "a clang offload bundle (HIP)", "a compressed clang offload bundle (HIP)",
    "PTX text"};

#define FATBIN_MAGIC 0xba55ed50u
#define BUNDLE_MAGIC "__CLANG_OFFLOAD_BUNDLE__"
#define BUNDLE_MAGIC_LEN 24

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
  if (n >= BUNDLE_MAGIC_LEN && memcmp(p, BUNDLE_MAGIC, BUNDLE_MAGIC_LEN) == 0) return IMG_BUNDLE;
  if (n >= 4 && memcmp(p, "CCOB", 4) == 0) return IMG_CCOB; /* compressed (ROCm 6) */
  if (looks_like_ptx(p, n)) return IMG_PTX;
  return IMG_UNKNOWN;
}

/* [off, off + len) lies within n bytes (no wrap-around). */
static bool within(size_t n, uint64_t off, uint64_t len) { return off <= n && len <= n - off; }

/* ---- ELF images: the tables every ELF file has --------------------------------------- */

/* The ELF header, program and section header tables of a 64-bit image lie within its n
 * bytes, as do the file-backed parts of segments and sections. NULL, or what is wrong. */
static const char *elf64_tables(const unsigned char *p, size_t n, Elf64_Ehdr *out) {
  Elf64_Ehdr h;
  if (n < sizeof h) return "it is shorter than an ELF header";
  memcpy(&h, p, sizeof h);
  if (h.e_phnum > 0) {
    if (h.e_phentsize != sizeof(Elf64_Phdr) || !within(n, h.e_phoff, (uint64_t)h.e_phnum * sizeof(Elf64_Phdr)))
      return "its program header table lies outside the file or has the wrong entry size";
    for (unsigned i = 0; i < h.e_phnum; i++) {
      Elf64_Phdr ph;
      memcpy(&ph, p + h.e_phoff + (size_t)i * sizeof ph, sizeof ph);
      if (ph.p_filesz > 0 && !within(n, ph.p_offset, ph.p_filesz))
        return "a segment lies past the end of the file";
    }
  }
  if (h.e_shoff != 0 || h.e_shnum != 0) {
    if (h.e_shentsize != sizeof(Elf64_Shdr) || !within(n, h.e_shoff, (uint64_t)h.e_shnum * sizeof(Elf64_Shdr)))
      return "its section header table lies outside the file or has the wrong entry size";
    if (h.e_shstrndx != SHN_UNDEF && h.e_shstrndx != SHN_XINDEX && h.e_shstrndx >= h.e_shnum)
      return "its section name table index is out of range";
    for (unsigned i = 0; i < h.e_shnum; i++) {
      Elf64_Shdr sh;
      memcpy(&sh, p + h.e_shoff + (size_t)i * sizeof sh, sizeof sh);
      if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL && !within(n, sh.sh_offset, sh.sh_size))
        return "a section lies past the end of the file";
    }
  }
  if (out) *out = h;
  return NULL;
}

/* ---- host shared objects: what dlopen reads -------------------------------------------- */

typedef struct so {
  const unsigned char *p;
  size_t n;
  Elf64_Ehdr h;
  uint64_t lo, hi; /* the span of the loadable segments (virtual addresses) */
} so_t;

static Elf64_Phdr so_ph(const so_t *o, unsigned i) {
  Elf64_Phdr ph;
  memcpy(&ph, o->p + o->h.e_phoff + (size_t)i * sizeof ph, sizeof ph);
  return ph;
}

/* The file offset of [va, va + len) when it lies in the file-backed part of a loadable
 * segment (what the loader maps from the file); false otherwise. */
static bool so_file_off(const so_t *o, uint64_t va, uint64_t len, uint64_t *off) {
  for (unsigned i = 0; i < o->h.e_phnum; i++) {
    Elf64_Phdr ph = so_ph(o, i);
    if (ph.p_type != PT_LOAD || va < ph.p_vaddr) continue;
    uint64_t d = va - ph.p_vaddr;
    if (d > ph.p_filesz || len > ph.p_filesz - d) continue;
    *off = ph.p_offset + d;
    return true;
  }
  return false;
}

/* [va, va + len) lies in the memory of one loadable segment (file-backed or zero-filled),
 * writable when writable is set (where relocations may write). */
static bool so_mapped(const so_t *o, uint64_t va, uint64_t len, bool writable) {
  for (unsigned i = 0; i < o->h.e_phnum; i++) {
    Elf64_Phdr ph = so_ph(o, i);
    if (ph.p_type != PT_LOAD || va < ph.p_vaddr || (writable && !(ph.p_flags & PF_W))) continue;
    uint64_t d = va - ph.p_vaddr;
    if (d <= ph.p_memsz && len <= ph.p_memsz - d) return true;
  }
  return false;
}

static bool pow2(uint64_t a) { return (a & (a - 1)) == 0; }

/* Notes: each header, name and descriptor within the segment (the loader reads the
 * GNU property notes). The descriptor and the next note start at the segment's
 * alignment (4, or 8 for 64-bit notes such as GNU properties), counted from the note's
 * start, as glibc's ELF_NOTE_DESC_OFFSET and ELF_NOTE_NEXT_OFFSET do. */
static bool notes_ok(const unsigned char *p, uint64_t size, uint64_t align) {
  uint64_t a = align == 8 ? 8 : 4, at = 0;
  while (at < size) {
    if (size - at < 12) return false;
    uint32_t nh[3];
    memcpy(nh, p + at, sizeof nh);
    uint64_t desc = (12 + (uint64_t)nh[0] + a - 1) / a * a, end = desc + nh[1];
    if (end > size - at) return false;
    end = (end + a - 1) / a * a;
    at = end >= size - at ? size : at + end;
  }
  return true;
}

static const char *so_segments(so_t *o) {
  const Elf64_Ehdr *h = &o->h;
  if (o->p[EI_DATA] != GP__HOST_DATA) return "it is of the other byte order";
  if (o->p[EI_VERSION] != EV_CURRENT || h->e_version != EV_CURRENT) return "its ELF version is unknown";
  if (h->e_ehsize < sizeof(Elf64_Ehdr)) return "its header size field is too small";
  if (h->e_phnum == 0 || h->e_phnum == PN_XNUM) return "it has no program header table";
  unsigned loads = 0;
  uint64_t prev_end = 0;
  for (unsigned i = 0; i < h->e_phnum; i++) {
    Elf64_Phdr ph = so_ph(o, i);
    if (ph.p_filesz > ph.p_memsz && (ph.p_type == PT_LOAD || ph.p_type == PT_TLS))
      return "a segment has more file bytes than memory bytes";
    if ((ph.p_type == PT_LOAD || ph.p_type == PT_TLS) && !pow2(ph.p_align))
      return "a segment's alignment is not a power of two";
    if (ph.p_type == PT_LOAD) {
      if (ph.p_align > 1 && (ph.p_vaddr - ph.p_offset) % ph.p_align != 0)
        return "a loadable segment's address and file offset disagree modulo its alignment";
      if (ph.p_memsz > UINT64_MAX - ph.p_vaddr || ph.p_vaddr + ph.p_memsz > (1ull << 47))
        return "a loadable segment's addresses overflow";
      if (loads > 0 && ph.p_vaddr < prev_end)
        return "its loadable segments overlap or are not in ascending order";
      if (loads == 0) o->lo = ph.p_vaddr;
      prev_end = ph.p_vaddr + ph.p_memsz;
      o->hi = prev_end;
      loads++;
    } else if ((ph.p_type == PT_NOTE || ph.p_type == PT_GNU_PROPERTY) &&
               !notes_ok(o->p + ph.p_offset, ph.p_filesz, ph.p_align)) {
      return "a note segment is malformed";
    }
  }
  if (loads == 0) return "it has no loadable segment";
  for (unsigned i = 0; i < h->e_phnum; i++) {
    Elf64_Phdr ph = so_ph(o, i);
    uint64_t off;
    if (ph.p_type == PT_DYNAMIC && !so_file_off(o, ph.p_vaddr, ph.p_memsz, &off))
      return "its dynamic section lies outside the file-backed loadable segments";
    if ((ph.p_type == PT_GNU_RELRO || ph.p_type == PT_TLS || ph.p_type == PT_GNU_EH_FRAME) &&
        !so_mapped(o, ph.p_vaddr, ph.p_type == PT_TLS ? ph.p_filesz : ph.p_memsz, false))
      return "a RELRO, TLS or unwind segment lies outside the loadable segments";
  }
  return NULL;
}

/* The dynamic section's values the checks need (tags of the gABI's table). */
typedef struct dyn {
  uint64_t strtab, strsz, symtab, syment, hash, gnu_hash, rela, relasz, relaent, jmprel,
      pltrelsz, pltrel, relr, relrsz, relrent, init, fini, init_array, init_arraysz,
      fini_array, fini_arraysz, versym, verdef, verdefnum, verneed, verneednum, flags;
  bool has_strtab, has_symtab, has_rel, textrel, preinit;
  uint64_t strings[64]; /* DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH offsets */
  unsigned nstrings;
} dyn_t;

static const char *so_read_dynamic(const so_t *o, dyn_t *d) {
  memset(d, 0, sizeof *d);
  uint64_t off = 0, size = 0;
  for (unsigned i = 0; i < o->h.e_phnum; i++) {
    Elf64_Phdr ph = so_ph(o, i);
    if (ph.p_type != PT_DYNAMIC) continue;
    if (size != 0) return "it has two dynamic sections";
    (void)so_file_off(o, ph.p_vaddr, ph.p_memsz, &off);
    size = ph.p_memsz;
  }
  if (size == 0) return "it has no dynamic section (not a shared object)";
  bool ended = false;
  for (uint64_t at = 0; at + sizeof(Elf64_Dyn) <= size && !ended; at += sizeof(Elf64_Dyn)) {
    Elf64_Dyn e;
    memcpy(&e, o->p + off + at, sizeof e);
    uint64_t v = e.d_un.d_val;
    switch (e.d_tag) {
      case DT_NULL: ended = true; break;
      case DT_STRTAB: d->strtab = v, d->has_strtab = true; break;
      case DT_STRSZ: d->strsz = v; break;
      case DT_SYMTAB: d->symtab = v, d->has_symtab = true; break;
      case DT_SYMENT: d->syment = v; break;
      case DT_HASH: d->hash = v; break;
      case DT_GNU_HASH: d->gnu_hash = v; break;
      case DT_RELA: d->rela = v; break;
      case DT_RELASZ: d->relasz = v; break;
      case DT_RELAENT: d->relaent = v; break;
      case DT_JMPREL: d->jmprel = v; break;
      case DT_PLTRELSZ: d->pltrelsz = v; break;
      case DT_PLTREL: d->pltrel = v; break;
      case DT_REL: case DT_RELSZ: d->has_rel = true; break;
#ifdef DT_RELR
      case DT_RELR: d->relr = v; break;
      case DT_RELRSZ: d->relrsz = v; break;
      case DT_RELRENT: d->relrent = v; break;
#endif
      case DT_INIT: d->init = v; break;
      case DT_FINI: d->fini = v; break;
      case DT_INIT_ARRAY: d->init_array = v; break;
      case DT_INIT_ARRAYSZ: d->init_arraysz = v; break;
      case DT_FINI_ARRAY: d->fini_array = v; break;
      case DT_FINI_ARRAYSZ: d->fini_arraysz = v; break;
      case DT_PREINIT_ARRAY: case DT_PREINIT_ARRAYSZ: d->preinit = true; break;
      case DT_VERSYM: d->versym = v; break;
      case DT_VERDEF: d->verdef = v; break;
      case DT_VERDEFNUM: d->verdefnum = v; break;
      case DT_VERNEED: d->verneed = v; break;
      case DT_VERNEEDNUM: d->verneednum = v; break;
      case DT_TEXTREL: d->textrel = true; break;
      case DT_FLAGS: d->flags = v; break;
      case DT_NEEDED: case DT_SONAME: case DT_RPATH: case DT_RUNPATH:
        if (d->nstrings == sizeof d->strings / sizeof d->strings[0]) return "it names too many libraries";
        d->strings[d->nstrings++] = v;
        break;
      default: break;
    }
  }
  if (!ended) return "its dynamic section has no terminating entry";
  if (d->flags & DF_TEXTREL) d->textrel = true;
  return NULL;
}

/* A NUL-terminated string at offset s of the string table. */
static bool so_string(const so_t *o, const dyn_t *d, uint64_t s) {
  uint64_t off;
  if (s >= d->strsz || !so_file_off(o, d->strtab + s, d->strsz - s, &off)) return false;
  return memchr(o->p + off, '\0', d->strsz - s) != NULL;
}

/* The number of symbols, from the SysV or the GNU hash table (the loader looks symbols
 * up through one of them, so every index it can reach is below this count). */
static const char *so_symbol_count(const so_t *o, const dyn_t *d, uint64_t *nsyms) {
  uint64_t off;
  if (d->hash) {
    uint32_t hv[2];
    if (!so_file_off(o, d->hash, sizeof hv, &off)) return "its hash table lies outside the file";
    memcpy(hv, o->p + off, sizeof hv);
    if (!so_file_off(o, d->hash, 8 + 4 * ((uint64_t)hv[0] + hv[1]), &off))
      return "its hash table lies outside the file";
    *nsyms = hv[1];
    if (!d->gnu_hash) return NULL;
  }
  if (!d->gnu_hash) return "it has no symbol hash table";
  uint32_t gh[4]; /* nbuckets, symoffset, bloom words, bloom shift */
  if (!so_file_off(o, d->gnu_hash, sizeof gh, &off)) return "its GNU hash table lies outside the file";
  memcpy(gh, o->p + off, sizeof gh);
  uint64_t buckets = d->gnu_hash + 16 + 8 * (uint64_t)gh[2];
  /* The loader masks bloom indices with (words - 1): zero words would read anywhere. */
  if (gh[0] == 0 || gh[2] == 0 || !pow2(gh[2]) || !so_file_off(o, d->gnu_hash + 16, 8 * (uint64_t)gh[2], &off) ||
      !so_file_off(o, buckets, 4 * (uint64_t)gh[0], &off))
    return "its GNU hash table lies outside the file";
  uint64_t chains = buckets + 4 * (uint64_t)gh[0], count = gh[1];
  for (uint32_t b = 0; b < gh[0]; b++) {
    uint32_t start;
    memcpy(&start, o->p + off + 4 * (uint64_t)b, 4);
    if (start == 0) continue;
    if (start < gh[1]) return "its GNU hash table is corrupt";
    for (uint64_t i = start;; i++) { /* a chain ends at a value with its low bit set */
      uint64_t coff;
      uint32_t h;
      if (i - gh[1] > o->n || !so_file_off(o, chains + 4 * (i - gh[1]), 4, &coff))
        return "its GNU hash table lies outside the file";
      memcpy(&h, o->p + coff, 4);
      if (i + 1 > count) count = i + 1;
      if (h & 1u) break;
    }
  }
  if (d->hash && count > *nsyms) return "its two hash tables disagree";
  *nsyms = count;
  return NULL;
}

/* Symbol i: its entry (and its version) in the file, its name in the string table, and,
 * when defined, an address of the object's own (dlsym and dladdr hand these out). */
static const char *so_symbol(const so_t *o, const dyn_t *d, uint64_t i) {
  uint64_t off;
  Elf64_Sym s;
  if (i > o->n / sizeof s || !so_file_off(o, d->symtab + i * sizeof s, sizeof s, &off))
    return "a symbol lies outside the file";
  memcpy(&s, o->p + off, sizeof s);
  if (s.st_name != 0 && !so_string(o, d, s.st_name)) return "a symbol's name lies outside the string table";
  bool defined = s.st_shndx != SHN_UNDEF && s.st_shndx != SHN_ABS && ELF64_ST_TYPE(s.st_info) != STT_TLS;
  if (defined && ELF64_ST_TYPE(s.st_info) != STT_SECTION &&
      (s.st_value < o->lo || s.st_value > o->hi || s.st_size > o->hi - s.st_value))
    return "a symbol's address lies outside the loadable segments";
  if (d->versym && !so_file_off(o, d->versym + 2 * i, 2, &off))
    return "its symbol version table lies outside the file";
  return NULL;
}

/* Every symbol the hash tables reach (what a lookup reads). */
static const char *so_symbols(const so_t *o, const dyn_t *d, uint64_t nsyms) {
  for (uint64_t i = 0; i < nsyms; i++) {
    const char *why = so_symbol(o, d, i);
    if (why) return why;
  }
  return NULL;
}

static const char *so_relocations(const so_t *o, const dyn_t *d, uint64_t nsyms) {
  const struct { uint64_t at, size; } tabs[2] = {{d->rela, d->relasz}, {d->jmprel, d->pltrelsz}};
  if (d->has_rel) return "it has REL relocations, which this machine's ABI does not use";
  if ((d->relasz && d->relaent != sizeof(Elf64_Rela)) || (d->pltrelsz && d->pltrel != DT_RELA))
    return "its relocation entries have the wrong size or kind";
  for (int t = 0; t < 2; t++) {
    uint64_t off;
    if (tabs[t].size == 0) continue;
    if (tabs[t].size % sizeof(Elf64_Rela) != 0 || !so_file_off(o, tabs[t].at, tabs[t].size, &off))
      return "a relocation table lies outside the file";
    for (uint64_t i = 0; i < tabs[t].size / sizeof(Elf64_Rela); i++) {
      Elf64_Rela r;
      memcpy(&r, o->p + off + i * sizeof r, sizeof r);
      /* The symbols the hash tables do not reach (undefined ones) are checked here. */
      uint64_t sym = ELF64_R_SYM(r.r_info);
      if (sym >= nsyms && so_symbol(o, d, sym) != NULL)
        return "a relocation names a symbol that does not exist";
      if (!so_mapped(o, r.r_offset, 8, !d->textrel))
        return "a relocation writes outside the object's writable segments";
    }
  }
  if (d->relrsz) { /* even entries are addresses, odd ones bitmaps of the next 63 words */
    uint64_t off, base = 0;
    if ((d->relrent && d->relrent != 8) || d->relrsz % 8 != 0 || !so_file_off(o, d->relr, d->relrsz, &off))
      return "its RELR relocation table lies outside the file";
    for (uint64_t i = 0; i < d->relrsz / 8; i++) {
      uint64_t e;
      memcpy(&e, o->p + off + 8 * i, 8);
      bool ok = (e & 1) || (e % 8 == 0 && so_mapped(o, e, 8, !d->textrel));
      for (unsigned j = 1; (e & 1) && j < 64 && ok; j++)
        ok = !((e >> j) & 1) || so_mapped(o, base + 8 * (uint64_t)(j - 1), 8, !d->textrel);
      if (!ok) return "a RELR relocation writes outside the object's writable segments";
      base = (e & 1) ? base + 63 * 8 : e + 8;
    }
  }
  return NULL;
}

/* Symbol versions: the definitions' and needs' chains, as the loader walks them. */
static const char *so_versions(const so_t *o, const dyn_t *d) {
  uint64_t at = d->verdef, off;
  for (uint64_t k = 0; d->verdef && k < d->verdefnum; k++) {
    Elf64_Verdef vd;
    if (!so_file_off(o, at, sizeof vd, &off)) return "its version definitions lie outside the file";
    memcpy(&vd, o->p + off, sizeof vd);
    uint64_t aux = at + vd.vd_aux;
    for (unsigned j = 0; j < vd.vd_cnt; j++) {
      Elf64_Verdaux va;
      if (!so_file_off(o, aux, sizeof va, &off)) return "its version definitions lie outside the file";
      memcpy(&va, o->p + off, sizeof va);
      if (!so_string(o, d, va.vda_name)) return "a version name lies outside the string table";
      if (va.vda_next == 0) break;
      aux += va.vda_next;
    }
    if (vd.vd_next == 0) break;
    at += vd.vd_next;
  }
  at = d->verneed;
  for (uint64_t k = 0; d->verneed && k < d->verneednum; k++) {
    Elf64_Verneed vn;
    if (!so_file_off(o, at, sizeof vn, &off)) return "its version needs lie outside the file";
    memcpy(&vn, o->p + off, sizeof vn);
    if (!so_string(o, d, vn.vn_file)) return "a version's library name lies outside the string table";
    uint64_t aux = at + vn.vn_aux;
    for (unsigned j = 0; j < vn.vn_cnt; j++) {
      Elf64_Vernaux va;
      if (!so_file_off(o, aux, sizeof va, &off)) return "its version needs lie outside the file";
      memcpy(&va, o->p + off, sizeof va);
      if (!so_string(o, d, va.vna_name)) return "a version name lies outside the string table";
      if (va.vna_next == 0) break;
      aux += va.vna_next;
    }
    if (vn.vn_next == 0) break;
    at += vn.vn_next;
  }
  return NULL;
}

static const char *so_dynamic(const so_t *o) {
  dyn_t d;
  const char *why = so_read_dynamic(o, &d);
  if (why) return why;
  uint64_t off;
  if (!d.has_strtab || !d.has_symtab) return "its dynamic section names no string or symbol table";
  if (!so_file_off(o, d.strtab, d.strsz, &off) || d.strsz == 0 || o->p[off + d.strsz - 1] != '\0')
    return "its string table lies outside the file or is not terminated";
  if (d.syment && d.syment != sizeof(Elf64_Sym)) return "its symbols have the wrong entry size";
  for (unsigned i = 0; i < d.nstrings; i++)
    if (!so_string(o, &d, d.strings[i])) return "a library name lies outside the string table";
  if (d.preinit) return "it has a preinit array, which only executables may have";
  if ((d.init && !so_mapped(o, d.init, 1, false)) || (d.fini && !so_mapped(o, d.fini, 1, false)))
    return "its init or fini function lies outside the loadable segments";
  if ((d.init_arraysz % 8) || (d.fini_arraysz % 8) ||
      (d.init_arraysz && !so_mapped(o, d.init_array, d.init_arraysz, false)) ||
      (d.fini_arraysz && !so_mapped(o, d.fini_array, d.fini_arraysz, false)))
    return "its init or fini array lies outside the loadable segments";
  uint64_t nsyms = 0;
  if ((why = so_symbol_count(o, &d, &nsyms)) != NULL) return why;
  if ((why = so_symbols(o, &d, nsyms)) != NULL) return why;
  if ((why = so_relocations(o, &d, nsyms)) != NULL) return why;
  return so_versions(o, &d);
}

/* What dlopen would read wrongly in a host shared object: NULL when nothing. */
static const char *host_so_check(const unsigned char *p, size_t n) {
  if (p[EI_CLASS] != ELFCLASS64) return NULL; /* 32-bit hosts: the tables only */
  so_t o;
  memset(&o, 0, sizeof o);
  o.p = p;
  o.n = n;
  const char *why = elf64_tables(p, n, &o.h);
  if (why == NULL) why = so_segments(&o);
  if (why == NULL) why = so_dynamic(&o);
  return why;
}

/* ---- fatbins and offload bundles ---------------------------------------------------------- */

/* A fatbin's header gives its size: {magic, version (16 bits), header size (16 bits),
 * size of what follows (64 bits)}. */
static const char *fatbin_check(const unsigned char *p, size_t n) {
  if (n < 16) return "it is shorter than a fatbin header";
  uint16_t header;
  uint64_t body;
  memcpy(&header, p + 6, 2);
  memcpy(&body, p + 8, 8);
  return header <= n && body <= n - header ? NULL : "its header describes data past its end";
}

/* A clang offload bundle: the magic, the number of entries, then per entry its code
 * object's offset and size and its target triple's size and text (clang's
 * ClangOffloadBundler documentation, "Bundled Code Object Layout"). */
static const char *bundle_check(const unsigned char *p, size_t n) {
  uint64_t count, at = BUNDLE_MAGIC_LEN + 8;
  if (n < at) return "it is shorter than a bundle header";
  memcpy(&count, p + BUNDLE_MAGIC_LEN, 8);
  if (count == 0) return "it holds no code object";
  if (count > (n - at) / 24) return "it claims more entries than it holds";
  for (uint64_t i = 0; i < count; i++) {
    uint64_t e[3]; /* offset, size, triple size */
    if (!within(n, at, sizeof e)) return "an entry's header lies past its end";
    memcpy(e, p + at, sizeof e);
    at += sizeof e;
    if (!within(n, at, e[2])) return "an entry's target name lies past its end";
    at += e[2];
    if (!within(n, e[0], e[1])) return "an entry's code object lies past its end";
  }
  return NULL;
}

/* A compressed bundle ("CCOB", clang's CompressedOffloadBundle): magic, version (16 bits),
 * method (16 bits), then the total file size (32 bits in version 2, 64 in version 3,
 * absent in version 1), the uncompressed size and a hash; the compressed data follows. */
static const char *ccob_check(const unsigned char *p, size_t n) {
  if (n < 8) return "it is shorter than a compressed bundle header";
  uint16_t version;
  memcpy(&version, p + 4, 2);
  size_t header = version == 1 ? 20 : version == 2 ? 24 : version == 3 ? 32 : 0;
  if (header == 0) return "its compressed bundle version is not 1, 2 or 3";
  if (n <= header) return "it is shorter than its compressed bundle header";
  uint64_t total = 0;
  if (version == 2) {
    uint32_t t;
    memcpy(&t, p + 8, 4);
    total = t;
  } else if (version == 3) {
    memcpy(&total, p + 8, 8);
  }
  if (version >= 2 && (total < header || total > n)) return "its recorded size exceeds the image";
  return NULL;
}

/* ---- the check ------------------------------------------------------------------------- */

static bool kind_accepted(image_kind_t k, int backend) {
  switch (backend) {
    case GP_BACKEND_CUDA: return k == IMG_CUBIN || k == IMG_FATBIN || k == IMG_PTX;
    case GP_BACKEND_HIP: return k == IMG_AMDGPU || k == IMG_BUNDLE || k == IMG_CCOB;
    default: return k == IMG_HOST_SO;
  }
}

static const char *backend_takes(int backend) {
  switch (backend) {
    case GP_BACKEND_CUDA: return "the cuda backend loads cubins, fatbins and PTX";
    case GP_BACKEND_HIP: return "the hip backend loads AMD GPU code objects and offload bundles";
    default: return "the cpu backend loads shared objects built from dialect sources";
  }
}

/* What is wrong with an image of kind k, or NULL. */
static const char *whole(image_kind_t k, const unsigned char *p, size_t n) {
  switch (k) {
    case IMG_PTX: return memchr(p, '\0', n) ? NULL : "it has no terminating NUL";
    case IMG_FATBIN: return fatbin_check(p, n);
    case IMG_BUNDLE: return bundle_check(p, n);
    case IMG_CCOB: return ccob_check(p, n);
    case IMG_HOST_SO: return host_so_check(p, n);
    case IMG_CUBIN:
    case IMG_AMDGPU: return p[EI_CLASS] == ELFCLASS64 ? elf64_tables(p, n, NULL) : NULL;
    default: return NULL;
  }
}

gp_status_t gp__image_check(const void *image, size_t n, const char *func, const char *what) {
  return gp__image_check_for(GP__BACKEND, image, n, func, what);
}

gp_status_t gp__image_check_for(int backend, const void *image, size_t n, const char *func,
                                const char *what) {
  const unsigned char *p = image;
  image_kind_t k = classify(p, n);
  if (!kind_accepted(k, backend))
    return gp__error(GP_ERROR_INVALID_IMAGE, func, "%s is %s: %s", what, g_kind_names[k],
                     backend_takes(backend));
  const char *why = whole(k, p, n);
  if (why == NULL) return GP_SUCCESS;
  if (k == IMG_PTX)
    return gp__error(GP_ERROR_INVALID_IMAGE, func,
                     "%s is PTX text without its terminating NUL within %zu bytes", what, n);
  return gp__error(GP_ERROR_INVALID_IMAGE, func,
                   "%s cannot be loaded: it is truncated or corrupt (%s is %zu bytes and %s)",
                   what, g_kind_names[k], n, why);
}

/* ---- reading image files ----------------------------------------------------------------- */

gp_status_t gp__image_open(const char *path, int extra_flags, const char *func, const char *what,
                           int *fd_out, struct stat *st_out) {
  /* O_NONBLOCK: opening a FIFO or a device must not block; what is not a regular file is
   * refused below, before anything is read. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | extra_flags);
  if (fd < 0) {
    int e = errno;
    return gp__error(e == ENOENT || e == ENOTDIR ? GP_ERROR_NOT_FOUND : GP_ERROR_INVALID_VALUE,
                     func, "%s cannot be opened: %s", what,
                     e == ELOOP ? "it is a symbolic link" : strerror(e));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int e = errno;
    close(fd);
    return gp__error(GP_ERROR_INVALID_VALUE, func, "%s is not a regular file%s%s", what,
                     S_ISREG(st.st_mode) ? ": " : "", S_ISREG(st.st_mode) ? strerror(e) : "");
  }
  if ((uint64_t)st.st_size > GP__IMAGE_MAX_BYTES) {
    close(fd);
    return gp__error(GP_ERROR_INVALID_IMAGE, func,
                     "%s is %lld bytes; gpuport loads images of at most %llu bytes", what,
                     (long long)st.st_size, (unsigned long long)GP__IMAGE_MAX_BYTES);
  }
  *fd_out = fd;
  if (st_out) *st_out = st;
  return GP_SUCCESS;
}

gp_status_t gp__image_read_fd(int fd, size_t size, const char *func, const char *what,
                              unsigned char **image) {
  unsigned char *buf = malloc(size + 1);
  if (buf == NULL)
    return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory to read %s (%zu bytes)", what,
                     size);
  size_t got = 0;
  while (got < size) { /* exactly the size fstat gave: a file that grows meanwhile is cut */
    ssize_t r = pread(fd, buf + got, size - got, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      int e = r < 0 ? errno : 0;
      free(buf);
      return gp__error(GP_ERROR_INVALID_IMAGE, func, "cannot read %s: %s", what,
                       e ? strerror(e) : "it shrank while being read");
    }
    got += (size_t)r;
  }
  buf[size] = '\0'; /* text images (PTX) need not end with NUL in the file: the copy does */
  *image = buf;
  return GP_SUCCESS;
}

gp_status_t gp__image_read_file(const char *path, const char *func, const char *what,
                                unsigned char **image, size_t *n) {
  int fd = -1;
  struct stat st;
  GP__TRY(gp__image_open(path, 0, func, what, &fd, &st));
  gp_status_t s = gp__image_read_fd(fd, (size_t)st.st_size, func, what, image);
  close(fd);
  if (s == GP_SUCCESS) *n = (size_t)st.st_size;
  return s;
}
