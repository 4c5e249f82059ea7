// The dtype path of the reference attention: dot_general's dtype rule and XLA:CPU's evaluation of each einsum.
#include "oracle/einsum_dtypes.h"

#include <stdexcept>
#include <tuple>

namespace rpa {
namespace {

// (is_complex, finfo.maxexp, finfo.nmant, bit width, is_signed) of
// type_properties in _dot_general_dtype_rule (lax.py:5837-5843). finfo of
// the ml_dtypes floats: maxexp is one past the largest exponent (e4m3fn
// 448 = 1.75 * 2^8 -> 9; e5m2 57344 = 1.75 * 2^15 -> 16), nmant the
// explicit mantissa bits; integers get -1 for both.
std::tuple<int, int, int, int, int> type_properties(DType d) {
  switch (d) {
    case DType::kFloat32: return {0, 128, 23, 32, 1};
    case DType::kBFloat16: return {0, 128, 7, 16, 1};
    case DType::kFloat16: return {0, 16, 10, 16, 1};
    case DType::kFloat8E4M3FN: return {0, 9, 3, 8, 1};
    case DType::kFloat8E5M2: return {0, 16, 2, 8, 1};
    case DType::kInt8: return {0, -1, -1, 8, 1};
    case DType::kInt4: return {0, -1, -1, 4, 1};
    default: throw std::invalid_argument("dot_general_result_dtype: not a computable dtype");
  }
}

bool is_float8(DType d) { return d == DType::kFloat8E4M3FN || d == DType::kFloat8E5M2; }

}  // namespace

DType dot_general_result_dtype(DType lhs, DType rhs) {
  const auto l = type_properties(lhs), r = type_properties(rhs);
  if (l > r) return lhs;
  if (r > l) return rhs;
  return lhs;  // equal tuples: the same dtype among the computable ones
}

ReferenceDtypes reference_dtypes(DType q, DType kv, bool has_k_scale, bool has_v_scale) {
  ReferenceDtypes t;
  t.q = q;
  t.kv = kv;
  t.k = has_k_scale ? q : kv;
  t.v = has_v_scale ? q : kv;
  // dot_general_result_dtype(q, k) upcast to the preferred float32; the
  // narrower-than-result check of _maybe_upcast only applies to integer
  // results, and float32 is never narrower than a computable float.
  (void)dot_general_result_dtype(t.q, t.k);
  t.scores = DType::kFloat32;
  t.probs = t.v;
  t.pv = dot_general_result_dtype(t.probs, t.v);  // == v
  t.out = q;
  if (is_integer_dtype(t.pv)) {
    t.pv_integer = true;
    t.pv_chain = {t.pv, t.pv, t.pv};
    t.pv_chain_length = 1;
  } else if (t.pv == DType::kFloat32) {
    t.pv_chain = {DType::kFloat32, DType::kFloat32, DType::kFloat32};
    t.pv_chain_length = 1;
  } else if (is_float8(t.pv)) {
    // xla/service/cpu/cpu_compiler.cc: FloatSupport(F8E4M3FN / F8E5M2, F16)
    // normalises the f8 dot to an f16 dot plus a convert to f8; the later
    // ChangeOpDataType(F16, F32) runs that f16 dot in f32 and converts back.
    t.pv_chain = {DType::kFloat32, DType::kFloat16, t.pv};
    t.pv_chain_length = 3;
  } else {
    // bf16: FloatNormalization with F32 as the high-precision type; f16:
    // ChangeOpDataType(F16, F32) for dots. Both convert the f32 result once.
    t.pv_chain = {DType::kFloat32, t.pv, t.pv};
    t.pv_chain_length = 2;
  }
  return t;
}

int64_t wrap_signed(int64_t x, int bits) {
  const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(x) & mask;
  if (bits < 64 && (u >> (bits - 1)) & 1u) u |= ~mask;
  return static_cast<int64_t>(u);
}

float convert_value(DType from, DType to, float x) {
  if (from == to) return x;
  if (is_integer_dtype(from) && is_integer_dtype(to))
    return static_cast<float>(wrap_signed(static_cast<int64_t>(x), dtype_bits(to)));
  // float -> int: encode truncates and saturates; int -> float and float ->
  // float: the (exact float32) value rounded to the target.
  return round_to(to, x);
}

}  // namespace rpa
