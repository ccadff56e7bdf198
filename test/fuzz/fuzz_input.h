/*
 * fuzz_input.h - what the libFuzzer harnesses share: the fuzzer's bytes as a file the
 * parsers under test open by path (a memfd named through /proc/self/fd, so no file is
 * left behind), and a sink that makes every byte a parser hands back be read.
 */
#ifndef GP_FUZZ_INPUT_H
#define GP_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writes data to a fresh memfd and puts its /proc path in path; returns the fd (close it
 * when done) or -1. */
static inline int fuzz_input_file(const uint8_t *data, size_t size, char *path, size_t n) {
  int fd = memfd_create("gpuport-fuzz", MFD_CLOEXEC);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < size) {
    ssize_t w = write(fd, data + done, size - done);
    if (w <= 0) {
      close(fd);
      return -1;
    }
    done += (size_t)w;
  }
  snprintf(path, n, "/proc/self/fd/%d", fd);
  return fd;
}

/* Reads every byte of [p, p + n): ASan reports any of them outside its allocation or
 * mapping. The volatile sink keeps the reads. */
static inline void fuzz_touch(const void *p, size_t n) {
  static volatile unsigned char sink;
  const unsigned char *b = p;
  unsigned char acc = 0;
  for (size_t i = 0; i < n; i++) acc ^= b[i];
  sink = acc;
}

#endif /* GP_FUZZ_INPUT_H */
