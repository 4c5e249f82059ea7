// How Python prints the values inside the mirrored f-strings: ints, shape tuples, 0-d JAX arrays.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oracle/dtype.h"

namespace rpa {

// str(int) of a Python int held in 128 bits.
std::string py_int_str(__int128 v);

// repr(tuple) of a shape: "()", "(2,)", "(1, 1)".
std::string py_shape_repr(const std::vector<int64_t>& shape);

// repr of a 0-d JAX array holding `value` (an integer value of `dtype`), as
// ArrayImpl.__repr__ (jax/_src/array.py:360-384) prints it with numpy's
// array2string: "Array(5, dtype=int32)", "Array(True, dtype=bool)",
// "Array(5., dtype=float32)" (numpy floats keep the point), and
// "Array(5, dtype=bfloat16)" (ml_dtypes floats print like str()).
std::string jax_scalar_repr(DType dtype, __int128 value);

// format(x, '') of the same array, what "{x}" prints: "5", "True", "5.0".
std::string jax_scalar_str(DType dtype, __int128 value);

}  // namespace rpa
