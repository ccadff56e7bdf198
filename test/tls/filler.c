/*
 * filler.c - a shared object whose whole TLS block (GP_TLS_FILLER_BYTES bytes) is
 * initial-exec, as libgomp's or PyTorch's libraries are: loaded with dlopen, it takes
 * that much of glibc's static TLS surplus. test_dlopen.c loads such objects to use the
 * surplus up before it loads gpuport. Built by check.sh, one object per size.
 */
#ifndef GP_TLS_FILLER_BYTES
#error "define GP_TLS_FILLER_BYTES"
#endif

static __thread unsigned char block[GP_TLS_FILLER_BYTES] __attribute__((tls_model("initial-exec")));

/* Touches the block: the initial-exec access is what makes the object need static TLS. */
__attribute__((visibility("default"))) int gp_tls_filler_touch(void) {
  return ++block[GP_TLS_FILLER_BYTES - 1];
}
