// Which dtype each step of ref_ragged_paged_attention computes in and returns, as JAX runs it on a CPU.
#pragma once

#include <array>
#include <cstdint>

#include "oracle/dtype.h"

namespace rpa {

// lax.dot_general's result dtype when no preferred_element_type is given
// (_dot_general_dtype_rule, jax/_src/lax/lax.py:5826-5852 at cec06d116c,
// mirroring XLA's shape_inference): the operand whose
// (is_complex, finfo.maxexp, finfo.nmant, bit width, is_signed) tuple is
// larger; equal tuples of different dtypes would raise TypeError, which no
// pair of the seven computable dtypes reaches. Computable dtypes only.
DType dot_general_result_dtype(DType lhs, DType rhs);

// The dtype path of one call of the reference (kernel.py:118-145).
struct ReferenceDtypes {
  DType q = DType::kFloat32;   // queries
  DType kv = DType::kFloat32;  // kv_pages as stored
  // K and V after the optional dequantisation (kernel.py:124-129):
  // `k.astype(f32) * k_scale` then `.astype(q.dtype)`, so q's dtype with a
  // scale and the stored dtype without one.
  DType k = DType::kFloat32;
  DType v = DType::kFloat32;
  // attn = einsum("qhd,khd->hqk", q, k, preferred_element_type=f32)
  // (kernel.py:132): einsum passes the operands unpromoted to dot_general
  // (jax/_src/numpy/einsum.py:442-448, 577-579), whose dtype rule gives
  // dot_general_result_dtype(q, k), upcast to the preferred float32
  // (_maybe_upcast, lax.py:5861-5872). On CPU, operands of different dtypes
  // are first converted to the result dtype (_handle_dot_precision,
  // lax.py:6161-6231, "cpu and gpu" branch). Every product of two values of
  // the computable dtypes is exact in double, so only the accumulation and
  // the final rounding to float32 matter.
  DType scores = DType::kFloat32;
  // Softmax runs in float32 (jax.nn.softmax, jax/_src/nn/functions.py:616-627)
  // and `.astype(v.dtype)` (kernel.py:144) casts the probabilities to V's dtype.
  DType probs = DType::kFloat32;
  // out = einsum("hqk,khd->qhd", attn, v) (kernel.py:145): no
  // preferred_element_type, so einsum takes dtypes.result_type(attn, v) =
  // v.dtype (einsum.py:442-444) and returns that dtype (einsum.py:594).
  DType pv = DType::kFloat32;
  // How XLA:CPU evaluates that dot: float accumulation in float32, then a
  // chain of conversions ending in `pv` (see pv_chain in einsum_dtypes.cc):
  //   f32: {f32}; bf16: {f32, bf16} (FloatNormalization to F32);
  //   f16: {f32, f16} (ChangeOpDataType F16 -> F32 for dots);
  //   f8: {f32, f16, f8} (FloatNormalization F8 -> F16, then F16 -> F32);
  //   int8 / int4: integer accumulation wrapping modulo 2^bits (S4 is
  //   normalised to S8; an integer narrowing convert truncates bits).
  std::array<DType, 3> pv_chain{};
  int pv_chain_length = 0;
  bool pv_integer = false;  // int8 / int4 V: the dot wraps modulo 2^bits
  // `.astype(queries.dtype)` (kernel.py:145).
  DType out = DType::kFloat32;
};

ReferenceDtypes reference_dtypes(DType q, DType kv, bool has_k_scale, bool has_v_scale);

// XLA's convert (what jnp.astype lowers to) of a value of `from` to `to`,
// both computable: float -> float rounds to nearest even with the target's
// overflow rule (round_to); float -> int truncates, saturates, NaN -> 0
// (encode); int -> float rounds the integer to the target; int -> int keeps
// the low bits (two's complement wrap), as XLA's integer narrowing does.
float convert_value(DType from, DType to, float x);

// An integer wrapped to a signed `bits`-bit two's complement value.
int64_t wrap_signed(int64_t x, int bits);

inline bool is_integer_dtype(DType d) { return dtype_info(d).kind == DTypeKind::kSignedInt; }

}  // namespace rpa
