// Python/JAX printing of ints, shape tuples and 0-d arrays inside f-strings.
#include "oracle/python_format.h"

namespace rpa {

std::string py_int_str(__int128 v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  unsigned __int128 u = neg ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  std::string s;
  while (u) s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10))), u /= 10;
  return neg ? "-" + s : s;
}

std::string py_shape_repr(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t k = 0; k < shape.size(); ++k) {
    if (k) s += ", ";
    s += std::to_string(shape[k]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

namespace {

std::string value_text(DType dtype, __int128 value, bool for_repr) {
  const auto& info = dtype_info(dtype);
  switch (info.kind) {
    case DTypeKind::kBool: return value ? "True" : "False";
    case DTypeKind::kSignedInt:
    case DTypeKind::kUnsignedInt: return py_int_str(value);
    case DTypeKind::kFloat:
    case DTypeKind::kComplex:
      // Only integral values reach here (the case reader's rule). numpy's
      // array2string prints "5." for its own floats; ml_dtypes types are not
      // np.floating and print as str(): "5". format() of a numpy scalar
      // prints Python's float repr, "5.0".
      if (info.from_ml_dtypes) return py_int_str(value);
      return py_int_str(value) + (for_repr ? "." : ".0");
  }
  return py_int_str(value);
}

}  // namespace

std::string jax_scalar_repr(DType dtype, __int128 value) {
  return "Array(" + value_text(dtype, value, true) + ", dtype=" + std::string(dtype_name(dtype)) + ")";
}

std::string jax_scalar_str(DType dtype, __int128 value) { return value_text(dtype, value, false); }

}  // namespace rpa
