// The dtype model: names, widths, packing and bit-exact conversions of every dtype a case may name.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace rpa {

// Every dtype a case file may name. The first seven are the ones attention can
// compute with (q and KV dtypes); the rest exist so validation can reject them
// with the same message Python prints.
enum class DType : uint8_t {
  kFloat32,
  kBFloat16,
  kFloat16,
  kFloat8E4M3FN,
  kFloat8E5M2,
  kInt8,
  kInt4,
  // Validation-only dtypes.
  kFloat64,
  kInt16,
  kInt32,
  kInt64,
  kUInt4,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kBool,
  kComplex64,
  kComplex128,
  kFloat8E4M3FNUZ,
  kFloat8E5M2FNUZ,
  kFloat8E4M3B11FNUZ,
  kInt2,
  kUInt2,
  kFloat8E3M4,
  kFloat8E4M3,
  kFloat8E8M0FNU,
  kFloat4E2M1FN,
  kFloat6E2M3FN,
  kFloat6E3M2FN,
  kInt1,
  kUInt1,
};

enum class DTypeKind : uint8_t { kFloat, kSignedInt, kUnsignedInt, kBool, kComplex };

struct DTypeInfo {
  DType id;
  std::string_view name;  // numpy / ml_dtypes name, as jnp.dtype(x).name prints it
  int bits;               // jax._src.dtypes.itemsize_bits
  DTypeKind kind;
  // numpy prints its own dtypes quoted (dtype('int32')) and ml_dtypes' bare
  // (dtype(bfloat16)); see numpy's arraydescr_repr.
  bool from_ml_dtypes;
  bool computable;  // one of the seven q / KV dtypes attention runs with
};

const DTypeInfo& dtype_info(DType dtype);
std::optional<DType> dtype_from_name(std::string_view name);
std::span<const DTypeInfo> all_dtypes();
std::span<const DType> computable_dtypes();

inline std::string_view dtype_name(DType d) { return dtype_info(d).name; }
inline int dtype_bits(DType d) { return dtype_info(d).bits; }

// repr(np.dtype(x)): "dtype('int32')" or "dtype(bfloat16)".
std::string dtype_repr(DType d);

// get_dtype_packing (kernel.py:678-680): 32 // itemsize_bits, so 0 for
// 64-bit and complex dtypes (which then divides by zero upstream).
int dtype_packing(DType d);

// --- Bit-exact conversions (computable dtypes only) ---------------------

// The bit pattern (in the low dtype_bits(d) bits) of x.astype(d).
// Floats: round to nearest, ties to even, as ml_dtypes does
// (ml_dtypes/include/float8.h ConvertImpl::run with kSaturate = kTruncate =
// false; Eigen's float_to_bfloat16_rtne for bfloat16): float16 / bfloat16 /
// e5m2 overflow to +-inf; e4m3fn has no inf, so overflow and +-inf become
// NaN (S.1111.111) and 464 is the tie that rounds down to 448; subnormals are
// kept, not flushed. A NaN keeps its sign and becomes the format's quiet NaN
// (bf16 0x7FC0, f16 0x7E00, e5m2 0x7E, e4m3fn 0x7F).
// Integers: XLA's convert on CPU, which jnp.astype runs
// (xla/service/elemental_ir_emitter.cc, float kConvert, and
// xla/literal.cc's constant folder: "saturating arithmetic ... NaN to
// zero"): truncate toward zero, clamp to [min, max] (+-inf included), NaN
// -> 0. ml_dtypes' own numpy cast to int4 wraps instead; JAX does not use it.
uint32_t encode(DType d, float x);

// The exact value of bit pattern `bits` (low dtype_bits(d) bits used).
float decode(DType d, uint32_t bits);

// decode(encode(x)): x rounded to d and widened back to float32.
inline float round_to(DType d, float x) { return decode(d, encode(d, x)); }

// True when x is exactly a value of d (NaN counts for the float dtypes that
// have one; signed zero is kept).
bool representable(DType d, double x);

// Unit roundoff of a float dtype: 2^-(mantissa bits + 1); for integer dtypes 0.
double unit_roundoff(DType d);
// Largest finite value of a computable dtype.
double max_finite(DType d);
// Number of explicit mantissa bits (0 for integers).
int mantissa_bits(DType d);

// --- Packed 32-bit words -------------------------------------------------
// Sub-32-bit arrays bitcast to uint32 pack `packing` consecutive rows of the
// second-minor dimension into one word, element j in bits [j*bits, (j+1)*bits)
// (the TPU sublane packing that strided_load_kv, kernel.py:361-393, reads).
uint32_t pack_word(DType d, std::span<const uint32_t> element_bits);
uint32_t unpack_word(DType d, uint32_t word, int j);

}  // namespace rpa
