/*
 * safetensors.c - the reader of safetensors.h. The rules checked are the format's own
 * (huggingface/safetensors, "Format"): the header is a JSON object, at most 100 MB, whose
 * keys are tensor names (plus an optional "__metadata__" object of strings); each value
 * has "dtype", "shape" (non-negative integers) and "data_offsets" [begin, end] relative
 * to the first byte after the header, with end - begin = product(shape) x element size.
 */
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_HEADER ((uint64_t)100 << 20) /* the format's limit */

struct safetensors {
  void *map;
  size_t map_bytes;
  char *names;                   /* every tensor name, NUL-terminated, back to back */
  safetensors_tensor_t *tensors;
  int n;
};

static const struct {
  const char *name;
  safetensors_dtype_t dtype;
  size_t size;
} dtypes[] = {{"F32", SAFETENSORS_F32, 4}, {"F16", SAFETENSORS_F16, 2}, {"BF16", SAFETENSORS_BF16, 2},
              {"F64", SAFETENSORS_F64, 8}, {"I64", SAFETENSORS_I64, 8}, {"I32", SAFETENSORS_I32, 4},
              {"I16", SAFETENSORS_I16, 2}, {"I8", SAFETENSORS_I8, 1},   {"U8", SAFETENSORS_U8, 1},
              {"BOOL", SAFETENSORS_BOOL, 1}};

size_t safetensors_dtype_size(safetensors_dtype_t dtype) {
  for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
    if (dtypes[i].dtype == dtype) return dtypes[i].size;
  return 0;
}

static int fail(char *err, size_t errlen, const char *path, const char *fmt, ...) {
  va_list ap;
  int k = snprintf(err, errlen, "%s: ", path);
  va_start(ap, fmt);
  if (k >= 0 && (size_t)k < errlen) vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
  va_end(ap);
  return -1;
}

/* A JSON number that is a non-negative integer representable exactly in a double. */
static bool json_u64(const cJSON *j, uint64_t *out) {
  if (!cJSON_IsNumber(j)) return false;
  double d = j->valuedouble;
  if (!(d >= 0.0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d) return false;
  *out = (uint64_t)d;
  return true;
}

/* Fills t from one header entry; data is the first byte after the header. */
static int parse_entry(const cJSON *e, const unsigned char *data, uint64_t data_bytes,
                       safetensors_tensor_t *t, const char *path, char *err, size_t errlen) {
  const char *name = e->string;
  if (!cJSON_IsObject(e)) return fail(err, errlen, path, "tensor '%s': not a JSON object", name);
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
  const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
  if (!cJSON_IsString(dt)) return fail(err, errlen, path, "tensor '%s': no dtype string", name);
  size_t esize = 0;
  for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
    if (!strcmp(dt->valuestring, dtypes[i].name)) t->dtype = dtypes[i].dtype, esize = dtypes[i].size;
  if (!esize)
    return fail(err, errlen, path, "tensor '%s': dtype '%s' is not supported", name, dt->valuestring);
  if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > SAFETENSORS_MAX_DIMS)
    return fail(err, errlen, path, "tensor '%s': shape is not an array of at most %d sizes", name,
                SAFETENSORS_MAX_DIMS);
  uint64_t elems = 1;
  t->ndim = 0;
  const cJSON *s;
  cJSON_ArrayForEach(s, shape) {
    uint64_t v;
    if (!json_u64(s, &v) || v > INT64_MAX)
      return fail(err, errlen, path, "tensor '%s': a shape entry is not a non-negative integer", name);
    if (__builtin_mul_overflow(elems, v, &elems))
      return fail(err, errlen, path, "tensor '%s': the shape overflows", name);
    t->shape[t->ndim++] = (int64_t)v;
  }
  uint64_t begin, end, bytes;
  if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 ||
      !json_u64(cJSON_GetArrayItem(offs, 0), &begin) || !json_u64(cJSON_GetArrayItem(offs, 1), &end))
    return fail(err, errlen, path, "tensor '%s': data_offsets is not [begin, end]", name);
  if (begin > end || end > data_bytes)
    return fail(err, errlen, path,
                "tensor '%s': data_offsets [%llu, %llu] lie outside the %llu data bytes", name,
                (unsigned long long)begin, (unsigned long long)end, (unsigned long long)data_bytes);
  if (__builtin_mul_overflow(elems, (uint64_t)esize, &bytes) || bytes != end - begin)
    return fail(err, errlen, path, "tensor '%s': %llu bytes of data for a shape of %llu elements of %zu bytes",
                name, (unsigned long long)(end - begin), (unsigned long long)elems, esize);
  t->data = data + begin;
  t->bytes = (size_t)bytes;
  return 0;
}

/* Parses the header JSON into st (names copied, data pointers into the mapping). */
static int parse_header(safetensors_t *st, const char *json, size_t json_len,
                        const unsigned char *data, uint64_t data_bytes, const char *path,
                        char *err, size_t errlen) {
  cJSON *root = cJSON_ParseWithLength(json, json_len);
  if (!root || !cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return fail(err, errlen, path, "the header is not a JSON object");
  }
  int n = 0;
  size_t name_bytes = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, root) {
    if (!strcmp(e->string, "__metadata__")) continue;
    n++;
    name_bytes += strlen(e->string) + 1;
  }
  st->tensors = calloc(n > 0 ? (size_t)n : 1, sizeof(*st->tensors));
  st->names = malloc(name_bytes + 1);
  if (!st->tensors || !st->names) {
    cJSON_Delete(root);
    return fail(err, errlen, path, "out of memory");
  }
  char *np = st->names;
  int rc = 0;
  cJSON_ArrayForEach(e, root) {
    if (!strcmp(e->string, "__metadata__")) {
      if (!cJSON_IsObject(e)) {
        rc = fail(err, errlen, path, "__metadata__ is not a JSON object");
        break;
      }
      continue;
    }
    safetensors_tensor_t *t = &st->tensors[st->n];
    size_t len = strlen(e->string) + 1;
    memcpy(np, e->string, len);
    t->name = np;
    np += len;
    if ((rc = parse_entry(e, data, data_bytes, t, path, err, errlen)) != 0) break;
    for (int i = 0; i < st->n; i++)
      if (!strcmp(st->tensors[i].name, t->name)) {
        rc = fail(err, errlen, path, "tensor '%s' appears twice", t->name);
        break;
      }
    if (rc) break;
    st->n++;
  }
  cJSON_Delete(root);
  return rc;
}

int safetensors_open(safetensors_t **out, const char *path, char *err, size_t errlen) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(err, errlen, path, "%s", strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return fail(err, errlen, path, "%s", strerror(e));
  }
  uint64_t size = (uint64_t)sb.st_size;
  if (size < 8) {
    close(fd);
    return fail(err, errlen, path, "%llu bytes: too short for a safetensors file", (unsigned long long)size);
  }
  void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
  int map_errno = errno;
  close(fd);
  if (map == MAP_FAILED) return fail(err, errlen, path, "mmap: %s", strerror(map_errno));
  const unsigned char *b = map;
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | b[i]; /* little-endian u64 */
  safetensors_t *st = calloc(1, sizeof(*st));
  int rc;
  if (!st) {
    rc = fail(err, errlen, path, "out of memory");
  } else if (hlen > MAX_HEADER || hlen > size - 8) {
    rc = fail(err, errlen, path, "header length %llu exceeds the file (%llu bytes) or 100 MB",
              (unsigned long long)hlen, (unsigned long long)size);
  } else {
    st->map = map;
    st->map_bytes = (size_t)size;
    rc = parse_header(st, (const char *)b + 8, (size_t)hlen, b + 8 + hlen, size - 8 - hlen, path,
                      err, errlen);
  }
  if (rc) {
    if (st) {
      free(st->tensors);
      free(st->names);
      free(st);
    }
    munmap(map, (size_t)size);
    return -1;
  }
  *out = st;
  return 0;
}

const safetensors_tensor_t *safetensors_find(const safetensors_t *st, const char *name) {
  for (int i = 0; i < st->n; i++)
    if (!strcmp(st->tensors[i].name, name)) return &st->tensors[i];
  return NULL;
}

int safetensors_count(const safetensors_t *st) { return st->n; }

const safetensors_tensor_t *safetensors_at(const safetensors_t *st, int i) {
  return i >= 0 && i < st->n ? &st->tensors[i] : NULL;
}

void safetensors_close(safetensors_t *st) {
  if (!st) return;
  munmap(st->map, st->map_bytes);
  free(st->tensors);
  free(st->names);
  free(st);
}
