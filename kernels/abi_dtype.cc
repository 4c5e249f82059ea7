// rpa_dtype <-> DType.
#include "kernels/abi_dtype.h"

namespace rpa {

DType dtype_of(rpa_dtype d) {
  switch (d) {
    case RPA_FLOAT32: return DType::kFloat32;
    case RPA_BFLOAT16: return DType::kBFloat16;
    case RPA_FLOAT16: return DType::kFloat16;
    case RPA_FLOAT8_E4M3FN: return DType::kFloat8E4M3FN;
    case RPA_FLOAT8_E5M2: return DType::kFloat8E5M2;
    case RPA_INT8: return DType::kInt8;
    case RPA_INT4: return DType::kInt4;
  }
  return DType::kFloat32;
}

rpa_dtype abi_dtype_of(DType d) {
  switch (d) {
    case DType::kBFloat16: return RPA_BFLOAT16;
    case DType::kFloat16: return RPA_FLOAT16;
    case DType::kFloat8E4M3FN: return RPA_FLOAT8_E4M3FN;
    case DType::kFloat8E5M2: return RPA_FLOAT8_E5M2;
    case DType::kInt8: return RPA_INT8;
    case DType::kInt4: return RPA_INT4;
    default: return RPA_FLOAT32;
  }
}

}  // namespace rpa
