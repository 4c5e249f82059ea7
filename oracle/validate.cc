// The validation mirror: static_validate_inputs, dynamic_validate_inputs, get_min_heads_per_blk and the kernel preamble.
//
// Each function follows one Python function of kernel.py (jax-ml/jax
// cec06d116c) statement by statement, so that the first failing check and
// its message are the ones Python produces. Python ints (shapes, options)
// never overflow here: shapes are int64 and arithmetic on them is done in
// 128 bits or compared exactly; JAX int32 arrays wrap.
#include "oracle/validate.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "oracle/messages.h"
#include "oracle/python_format.h"

namespace rpa {
namespace {

using i128 = __int128;

std::string str(i128 v) { return py_int_str(v); }

// Python's a % b and a // b on ints (floor semantics), with the
// ZeroDivisionError CPython 3.11 raises.
i128 py_mod(i128 a, i128 b) {
  if (b == 0) raise_py(Msg::kIntegerModuloByZero);
  i128 r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
i128 py_floordiv(i128 a, i128 b) {
  if (b == 0) raise_py(Msg::kIntegerDivisionByZero);
  i128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// `a, b, c = x.shape` (CPython 3.11's unpack_iterable messages).
void unpack(const std::vector<int64_t>& shape, size_t expected) {
  if (shape.size() < expected)
    raise_py(Msg::kUnpackNotEnough, {std::to_string(expected), std::to_string(shape.size())});
  if (shape.size() > expected) raise_py(Msg::kUnpackTooMany, {std::to_string(expected)});
}

// The k-th element of an index array as the integer it holds (uint64 values
// above INT64_MAX are stored as their two's-complement bit pattern).
i128 element(const IndexArg& a, size_t k) {
  if (a.dtype == DType::kUInt64) return static_cast<i128>(static_cast<uint64_t>(a.data[k]));
  return a.data[k];
}

void require_data(const IndexArg& a, const char* name) {
  if (!a.has_data) throw std::invalid_argument("field '" + std::string(name) + ".data': missing (the checks read it)");
}

// JAX int32 arithmetic wraps modulo 2^32.
int32_t wrap32(i128 v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); }

// A value wrapped into an integer dtype (two's complement, or modulo 2^bits).
// This is also what happens to a Python int meeting an integer array in a
// binary op: lax._convert_element_type (jax/_src/lax/lax.py:1721-1729)
// converts it with np.asarray(v).astype(dtype), which wraps. Other dtypes
// keep the value (bool and float arrays meet a weak int in a wider type).
i128 wrap_to(DType d, i128 v) {
  const auto& info = dtype_info(d);
  if (info.kind != DTypeKind::kSignedInt && info.kind != DTypeKind::kUnsignedInt) return v;
  const int bits = info.bits;
  const unsigned __int128 mask = (static_cast<unsigned __int128>(1) << bits) - 1;
  const unsigned __int128 u = static_cast<unsigned __int128>(v) & mask;
  if (info.kind == DTypeKind::kUnsignedInt) return static_cast<i128>(u);
  const unsigned __int128 sign = static_cast<unsigned __int128>(1) << (bits - 1);
  return (u & sign) ? static_cast<i128>(u) - static_cast<i128>(mask) - 1 : static_cast<i128>(u);
}

// jnp.floor_divide on int32 (jax/_src/numpy/ufuncs.py:2529-2538): lax.div
// truncates (x / 0 = -1 and INT_MIN / -1 = INT_MIN, XLA's rules), then the
// quotient is lowered by one where the signs differ and lax.rem (x % 0 = x)
// is nonzero.
int32_t jnp_floor_divide_i32(int32_t x, int32_t y) {
  int32_t q, r;
  if (y == 0) {
    q = -1, r = x;
  } else if (x == std::numeric_limits<int32_t>::min() && y == -1) {
    q = x, r = 0;
  } else {
    q = x / y, r = x % y;
  }
  auto sign = [](int32_t v) { return (v > 0) - (v < 0); };
  if (sign(x) != sign(y) && r != 0) q = wrap32(static_cast<i128>(q) - 1);
  return q;
}

// The Python-int compare of an option: `x <= 0`, `0 < x <= n`.
bool le_zero(const PyValue& v) {
  const int c = py_compare(v, 0);
  return c == -1 || c == 0;
}

// The static checks, kernel.py:216-287, with the options the caller passes.
struct StaticOptions {
  const PyValue* sliding_window;
  const PyValue* soft_cap;
  const PyValue* k_scale;
  const PyValue* v_scale;
  const PyValue* num_kv_pages_per_block;
  const PyValue* num_queries_per_block;
  const PyValue* vmem_limit_bytes;
};

void static_checks(const CallArgs& a, const StaticOptions& o) {
  unpack(a.q.shape, 3);                                            // :236
  const int64_t num_q_heads = a.q.shape[1], head_dim = a.q.shape[2];
  unpack(a.kv_pages.shape, 4);                                     // :237
  const int64_t num_combined_kv_heads = a.kv_pages.shape[2], head_dim_k = a.kv_pages.shape[3];
  if (py_mod(num_combined_kv_heads, 2) != 0) raise_py(Msg::kAssertCombinedKvHeadsEven);  // :238
  if (!(o.k_scale->is_float() || o.k_scale->is_none())) raise_py(Msg::kAssertKScaleFloat);  // :239
  if (!(o.v_scale->is_float() || o.v_scale->is_none())) raise_py(Msg::kAssertVScaleFloat);  // :240
  const i128 num_kv_heads = py_floordiv(num_combined_kv_heads, 2);  // :241
  unpack(a.page_indices.shape, 2);                                  // :242
  const int64_t max_num_seqs = a.page_indices.shape[0], pages_per_seq = a.page_indices.shape[1];
  if (a.num_seqs.shape != std::vector<int64_t>{1})                 // :243-244
    raise_py(Msg::kNumSeqsShape, {py_shape_repr(a.num_seqs.shape)});
  if (head_dim_k != head_dim) raise_py(Msg::kHeadDimMismatch, {str(head_dim), str(head_dim_k)});  // :245-248
  if (a.kv_lens.shape != std::vector<int64_t>{max_num_seqs})       // :249-253
    raise_py(Msg::kKvLensShape, {py_shape_repr(a.kv_lens.shape), str(max_num_seqs)});
  const i128 seqs_plus_one = static_cast<i128>(max_num_seqs) + 1;
  if (a.cu_q_lens.shape.size() != 1 || a.cu_q_lens.shape[0] != seqs_plus_one)  // :254-258
    raise_py(Msg::kCuQLensShape, {py_shape_repr(a.cu_q_lens.shape), str(seqs_plus_one)});
  if (a.kv_lens.dtype != DType::kInt32 || a.page_indices.dtype != DType::kInt32 ||  // :259-268
      a.cu_q_lens.dtype != DType::kInt32)
    raise_py(Msg::kIndexDtypes,
             {dtype_repr(a.kv_lens.dtype), dtype_repr(a.page_indices.dtype), dtype_repr(a.cu_q_lens.dtype)});
  if (py_mod(num_q_heads, num_kv_heads) != 0)                       // :269-270
    raise_py(Msg::kHeadsNotDivisible, {str(num_q_heads), str(num_kv_heads)});
  if (!o.sliding_window->is_none() && le_zero(*o.sliding_window))  // :271-272
    raise_py(Msg::kSlidingWindowPositive, {py_repr(*o.sliding_window)});
  if (!o.soft_cap->is_none() && py_equals_zero(*o.soft_cap))       // :273-274
    raise_py(Msg::kSoftCapZero, {py_repr(*o.soft_cap)});
  if (!o.num_kv_pages_per_block->is_none()) {                      // :275-281
    // not 0 < x <= pages_per_seq (a chained comparison; NaN fails both).
    const bool above_zero = py_compare(*o.num_kv_pages_per_block, 0) == 1;
    const int c = py_compare(*o.num_kv_pages_per_block, pages_per_seq);
    if (!(above_zero && (c == -1 || c == 0)))
      raise_py(Msg::kKvPagesPerBlockRange, {py_repr(*o.num_kv_pages_per_block), str(pages_per_seq)});
  }
  if (!o.num_queries_per_block->is_none() && le_zero(*o.num_queries_per_block))  // :282-283
    raise_py(Msg::kQueriesPerBlockPositive, {py_repr(*o.num_queries_per_block)});
  if (!o.vmem_limit_bytes->is_none() && le_zero(*o.vmem_limit_bytes))  // :284-285
    raise_py(Msg::kVmemLimitPositive, {py_repr(*o.vmem_limit_bytes)});
  // :286-287 no constraints on sm_scale and mask_value.
}

// can_be_xla_fully_tiled, kernel.py:689-693.
bool can_be_xla_fully_tiled(i128 x, i128 packing) {
  if (py_mod(x, packing) != 0) return false;
  x = py_floordiv(x, packing);
  return x == 1 || x == 2 || x == 4 || x == 8 || py_mod(x, 8) == 0;
}

// Converts a block size Python holds to what the kernels take.
int64_t as_block_size(const PyValue& v, const char* name) {
  if (v.kind == PyValue::Kind::kBool) return v.b ? 1 : 0;
  if (v.kind == PyValue::Kind::kInt && v.i >= 0 && v.i <= std::numeric_limits<int64_t>::max())
    return static_cast<int64_t>(v.i);
  throw std::invalid_argument(std::string(name) + "=" + py_repr(v) +
                              " is accepted by the Python source but is not a block size the kernels can run");
}

}  // namespace

void static_validate_inputs(const CallArgs& a) {
  static_checks(a, {&a.sliding_window, &a.soft_cap, &a.k_scale, &a.v_scale, &a.num_kv_pages_per_block,
                    &a.num_queries_per_block, &a.vmem_limit_bytes});
}

void static_validate_reference_inputs(const CallArgs& a) {
  // kernel.py:88-101 passes sm_scale, k_scale, v_scale, sliding_window,
  // soft_cap and mask_value; the block-size and VMEM options stay None.
  const PyValue none;
  static_checks(a, {&a.sliding_window, &a.soft_cap, &a.k_scale, &a.v_scale, &none, &none, &none});
}

// dynamic_validate_inputs, kernel.py:152-212.
void dynamic_validate_inputs(const CallArgs& a) {
  static_validate_inputs(a);                                       // :172-188
  require_data(a.kv_lens, "kv_lens");
  require_data(a.cu_q_lens, "cu_q_lens");
  require_data(a.num_seqs, "num_seqs");
  const int64_t max_num_batched_tokens = a.q.shape[0];             // :189
  const int64_t page_size = a.kv_pages.shape[1];                   // :190
  const int64_t max_num_seqs = a.page_indices.shape[0], pages_per_seq = a.page_indices.shape[1];  // :191
  // num_seqs[0]: a 0-d array of num_seqs' own dtype (not checked upstream).
  const DType ns_dtype = a.num_seqs.dtype;
  const i128 ns = element(a.num_seqs, 0);
  if (ns > wrap_to(ns_dtype, max_num_seqs))                       // :192-193
    raise_py(Msg::kNumSeqsTooLarge, {jax_scalar_repr(ns_dtype, ns), str(max_num_seqs)});
  // kv_lens is int32 here (static validation checked it).
  if (a.kv_lens.data.empty()) raise_py(Msg::kMaxOfEmpty);          // :194 jnp.max of an empty array
  const int32_t max_kv_len = static_cast<int32_t>(*std::max_element(a.kv_lens.data.begin(), a.kv_lens.data.end()));
  // :195 pl.cdiv (jax/_src/pallas/utils.py:47-60): a concrete int32 array
  // passes is_dim (operator.index works), so it is (a + b - 1) // b in JAX
  // int32 arithmetic: wrapping adds, then jnp.floor_divide.
  const int32_t min_pages_per_seq =
      jnp_floor_divide_i32(wrap32(static_cast<i128>(max_kv_len) + page_size - 1), wrap32(page_size));
  if (wrap32(pages_per_seq) < min_pages_per_seq)                   // :196-200
    raise_py(Msg::kPagesPerSeqTooSmall, {str(pages_per_seq), jax_scalar_repr(DType::kInt32, min_pages_per_seq),
                                         jax_scalar_repr(DType::kInt32, max_kv_len), str(page_size)});
  // :201 cu_q_lens[num_seqs[0]]: indexing with a 0-d array.
  const auto& ns_info = dtype_info(ns_dtype);
  const i128 cu_size = static_cast<i128>(a.cu_q_lens.data.size());  // max_num_seqs + 1 >= 1
  if (ns_info.kind == DTypeKind::kBool) {
    // A bool scalar is a mask: x[True] has shape (1, n), x[False] (0, n);
    // `if` on it is ambiguous (n >= 2 here, since True > max_num_seqs = 0
    // was rejected above) or empty (jax/_src/core.py:933-939).
    raise_py(ns ? Msg::kTruthValueAmbiguous : Msg::kTruthValueEmpty);
  }
  if (ns_info.kind != DTypeKind::kSignedInt && ns_info.kind != DTypeKind::kUnsignedInt)
    raise_py(Msg::kIndexerType, {std::string(dtype_name(ns_dtype))});  // indexing.py:86-87
  // A dynamic index: a negative one has the size added once, in the
  // index's dtype (lax/slicing.py:3538-3541), then lax.dynamic_slice clamps.
  i128 idx = ns;
  if (idx < 0) idx = wrap_to(ns_dtype, idx + wrap_to(ns_dtype, cu_size));
  idx = std::clamp<i128>(idx, 0, cu_size - 1);
  const i128 total = element(a.cu_q_lens, static_cast<size_t>(idx));
  if (total > wrap32(max_num_batched_tokens))                      // :201-205
    raise_py(Msg::kTotalQTokens, {str(total), str(max_num_batched_tokens)});
  // ns <= max_num_seqs holds here (also after the wrap above), so every
  // index below is in range; the bound is only a guard.
  for (i128 i = 0; i < ns && i < max_num_seqs; ++i) {           // :206 range(num_seqs[0])
    const auto k = static_cast<size_t>(i);
    const int32_t q_len = wrap32(element(a.cu_q_lens, k + 1) - element(a.cu_q_lens, k));  // :207
    const int32_t kv_len = static_cast<int32_t>(element(a.kv_lens, k));                  // :208
    if (q_len > kv_len)                                            // :209-212
      raise_py(Msg::kQLenExceedsKvLen,
               {jax_scalar_repr(DType::kInt32, q_len), jax_scalar_repr(DType::kInt32, kv_len), str(i)});
  }
}

// get_min_heads_per_blk, kernel.py:683-715.
HeadBlocks get_min_heads_per_blk(int64_t num_q_heads, int64_t num_combined_kv_heads, DType q_dtype,
                                 DType kv_dtype) {
  const i128 q_packing = dtype_packing(q_dtype);                   // :686 (get_dtype_packing :678-680)
  const i128 kv_packing = dtype_packing(kv_dtype);                 // :687
  if (!can_be_xla_fully_tiled(num_combined_kv_heads, kv_packing))  // :696-699
    raise_py(Msg::kNotTileable, {str(num_combined_kv_heads)});
  if (py_mod(num_combined_kv_heads, 2) != 0) raise_py(Msg::kAssertMinHeadsCombinedEven);  // :700
  const i128 num_kv_heads = py_floordiv(num_combined_kv_heads, 2);  // :701
  if (py_mod(num_q_heads, num_kv_heads) != 0) raise_py(Msg::kAssertMinHeadsDivisible);   // :702
  const i128 ratio = py_floordiv(num_q_heads, num_kv_heads);        // :703
  const i128 max_combined_kv_tiling = 8 * kv_packing;               // :706
  const i128 min_combined_kv_heads =                                // :707-711
      py_mod(num_combined_kv_heads, max_combined_kv_tiling) == 0 ? max_combined_kv_tiling : num_combined_kv_heads;
  const i128 min_q_heads = py_floordiv(min_combined_kv_heads, 2) * ratio;  // :712
  if (can_be_xla_fully_tiled(min_q_heads, q_packing))              // :713-714
    return {static_cast<int64_t>(min_q_heads), static_cast<int64_t>(min_combined_kv_heads)};
  return {num_q_heads, num_combined_kv_heads};                     // :715
}

// ragged_paged_attention, kernel.py:777-822 (what runs before pallas_call).
KernelEntry ragged_paged_attention_entry(const CallArgs& a, const std::string& default_device_kind) {
  static_validate_inputs(a);                                       // :777-793
  // :796-800 unpack the shapes again (their ranks were checked) and
  // repeat the assert of :798 (it holds after :238).
  const int64_t num_q_tokens = a.q.shape[0], num_q_heads = a.q.shape[1], head_dim = a.q.shape[2];
  const int64_t page_size = a.kv_pages.shape[1], num_combined_kv_heads = a.kv_pages.shape[2];
  const i128 num_kv_heads = py_floordiv(num_combined_kv_heads, 2);  // :799
  const int64_t pages_per_seq = a.page_indices.shape[1];           // :800
  KernelEntry e;
  e.heads = get_min_heads_per_blk(num_q_heads, num_combined_kv_heads, a.q.dtype, a.kv_pages.dtype);  // :801-803
  e.num_q_per_blk = a.num_queries_per_block;                      // :804
  e.num_kv_pages_per_blk = a.num_kv_pages_per_block;              // :805
  if (e.num_q_per_blk.is_none() || e.num_kv_pages_per_blk.is_none()) {  // :806-816: both are replaced
    const std::string& kind = a.device_kind ? *a.device_kind : default_device_kind;
    const BlockSizes b = get_tuned_block_sizes(a.q.dtype, a.kv_pages.dtype, e.heads.num_q_heads_per_blk,
                                               py_floordiv(e.heads.num_combined_kv_heads_per_blk, 2), head_dim,
                                               page_size, num_q_tokens, pages_per_seq, kind);
    e.num_kv_pages_per_blk = PyValue::integer(b.num_kv_pages_per_blk);
    e.num_q_per_blk = PyValue::integer(b.num_q_per_blk);
  }
  const i128 num_q_heads_per_kv_head = py_floordiv(num_q_heads, num_kv_heads);  // :817 (num_kv_heads != 0 by :269)
  // :818 pl.cdiv(num_q_tokens, num_q_per_blk) cannot raise: the divisor is
  // a positive int (validated at :282, or min(tokens, bq) with tokens > 0
  // asserted by simplify_key), True, or a float (lax.div, no exception).
  // :819 holds: num_combined_kv_heads_per_blk is 8 * packing or the even
  // num_combined_kv_heads.
  if (py_mod(e.heads.num_q_heads_per_blk, num_q_heads_per_kv_head) != 0)  // :821
    raise_py(Msg::kAssertQHeadsPerBlk);
  py_floordiv(num_q_heads, e.heads.num_q_heads_per_blk);          // :822 num_heads_blks
  return e;
}

KernelConfig kernel_entry_config(const CallArgs& a, const std::string& default_device_kind) {
  const KernelEntry e = ragged_paged_attention_entry(a, default_device_kind);
  KernelConfig c;
  c.heads = e.heads;
  c.blocks.num_kv_pages_per_blk = as_block_size(e.num_kv_pages_per_blk, "num_kv_pages_per_block");
  c.blocks.num_q_per_blk = as_block_size(e.num_q_per_blk, "num_queries_per_block");
  return c;
}

int64_t reference_entry_checks(const CallArgs& a) {
  static_validate_reference_inputs(a);                             // :88-101
  // :104-108 unpack kv_pages.shape and repeat the asserts of :238 and :270.
  require_data(a.num_seqs, "num_seqs");
  const auto kind = dtype_info(a.num_seqs.dtype).kind;
  if (kind != DTypeKind::kSignedInt && kind != DTypeKind::kUnsignedInt)  // :111 range(num_seqs[0])
    raise_py(Msg::kOnlyIntegerScalarIndex);
  const i128 n = element(a.num_seqs, 0);
  if (n <= 0) raise_py(Msg::kConcatenateEmpty);                    // :148 jnp.concatenate([])
  return n > std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(n);
}

}  // namespace rpa
