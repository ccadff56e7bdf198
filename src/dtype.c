/* dtype.c - element type sizes and names. */
#include "internal.h"

size_t gp_dtype_size(gp_dtype_t dtype) {
  switch (dtype) {
    case GP_F64: case GP_I64: case GP_U64: return 8;
    case GP_F32: case GP_I32: case GP_U32: return 4;
    case GP_F16: case GP_BF16: return 2;
    case GP_I8: case GP_U8: case GP_FP8_E4M3: case GP_FP8_E5M2: return 1;
    default: return 0;
  }
}

const char *gp_dtype_name(gp_dtype_t dtype) {
  switch (dtype) {
    case GP_F32: return "f32";
    case GP_F64: return "f64";
    case GP_F16: return "f16";
    case GP_BF16: return "bf16";
    case GP_I8: return "i8";
    case GP_U8: return "u8";
    case GP_I32: return "i32";
    case GP_U32: return "u32";
    case GP_I64: return "i64";
    case GP_U64: return "u64";
    case GP_FP8_E4M3: return "fp8_e4m3";
    case GP_FP8_E5M2: return "fp8_e5m2";
    default: return "invalid";
  }
}
