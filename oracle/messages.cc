// The one table of exception classes and message templates the validation mirror raises, with their upstream sites.
#include "oracle/messages.h"

#include <array>
#include <stdexcept>

#include "oracle/py_error.h"

namespace rpa {
namespace {

// Lines are those of jax-ml/jax at cec06d116c:
// jax/experimental/pallas/ops/tpu/ragged_paged_attention/{kernel,tuned_block_sizes}.py.
constexpr std::array<MessageTemplate, 35> kTemplates{{
    {Msg::kUnpackNotEnough, "unpack_not_enough", "ValueError",
     "not enough values to unpack (expected {expected}, got {got})",
     "tuple unpacking of a shape (CPython 3.11 ceval.c, unpack_iterable)", "CPython 3.11",
     "static_validate_inputs kernel.py:236 (q), 237 (kv_pages), 242 (page_indices)"},
    {Msg::kUnpackTooMany, "unpack_too_many", "ValueError", "too many values to unpack (expected {expected})",
     "tuple unpacking of a shape (CPython 3.11 ceval.c, unpack_iterable)", "CPython 3.11",
     "static_validate_inputs kernel.py:236 (q), 237 (kv_pages), 242 (page_indices)"},
    {Msg::kAssertCombinedKvHeadsEven, "assert_combined_kv_heads_even", "AssertionError", "",
     "static_validate_inputs", "kernel.py:238", "assert num_combined_kv_heads % 2 == 0"},
    {Msg::kAssertKScaleFloat, "assert_k_scale_float", "AssertionError", "", "static_validate_inputs",
     "kernel.py:239", "assert isinstance(k_scale, float) or k_scale is None"},
    {Msg::kAssertVScaleFloat, "assert_v_scale_float", "AssertionError", "", "static_validate_inputs",
     "kernel.py:240", "assert isinstance(v_scale, float) or v_scale is None"},
    {Msg::kNumSeqsShape, "num_seqs_shape", "ValueError", "{num_seqs.shape=} must be (1,)",
     "static_validate_inputs", "kernel.py:243-244", "kernel.py:244"},
    {Msg::kHeadDimMismatch, "head_dim_mismatch", "ValueError",
     "Q head_dim {head_dim} must be the same as that of K/V {head_dim_k}.", "static_validate_inputs",
     "kernel.py:245-248", "kernel.py:246"},
    {Msg::kKvLensShape, "kv_lens_shape", "ValueError",
     "Expected {kv_lens.shape=} to be ({max_num_seqs},) where `max_num_seqs` is `page_indices.shape[0]`.",
     "static_validate_inputs", "kernel.py:249-253", "kernel.py:250"},
    {Msg::kCuQLensShape, "cu_q_lens_shape", "ValueError",
     "Expected {cu_q_lens.shape=} to be ({max_num_seqs + 1},)  where `max_num_seqs` is "
     "`page_indices.shape[0]`.",
     "static_validate_inputs", "kernel.py:254-258", "kernel.py:255"},
    {Msg::kIndexDtypes, "index_dtypes", "ValueError",
     "The dtype of `kv_lens`, `page_indices`, and `cu_q_lens` must be int32. Got {kv_lens.dtype=}, "
     "{page_indices.dtype=}, {cu_q_lens.dtype=}.",
     "static_validate_inputs", "kernel.py:259-268", "kernel.py:264"},
    {Msg::kIntegerModuloByZero, "integer_modulo_by_zero", "ZeroDivisionError", "integer modulo by zero",
     "int % 0 (CPython 3.11 longobject.c, l_mod)", "CPython 3.11",
     "kernel.py:269 (num_kv_heads 0), 690 (packing 0: 64-bit or complex dtype), 702, "
     "821 (num_q_heads 0)"},
    {Msg::kHeadsNotDivisible, "heads_not_divisible", "ValueError",
     "{num_q_heads=} must be divisible by {num_kv_heads=}", "static_validate_inputs", "kernel.py:269-270",
     "kernel.py:270"},
    {Msg::kSlidingWindowPositive, "sliding_window_positive", "ValueError", "{sliding_window=} must be positive.",
     "static_validate_inputs", "kernel.py:271-272", "kernel.py:272"},
    {Msg::kSoftCapZero, "soft_cap_zero", "ValueError", "{soft_cap=} must not be 0.0.", "static_validate_inputs",
     "kernel.py:273-274", "kernel.py:274"},
    {Msg::kKvPagesPerBlockRange, "kv_pages_per_block_range", "ValueError",
     "{num_kv_pages_per_block=} must be in range (0, {pages_per_seq}].", "static_validate_inputs",
     "kernel.py:275-281", "kernel.py:279"},
    {Msg::kQueriesPerBlockPositive, "queries_per_block_positive", "ValueError",
     "{num_queries_per_block=} must be positive.", "static_validate_inputs", "kernel.py:282-283",
     "kernel.py:283"},
    {Msg::kVmemLimitPositive, "vmem_limit_positive", "ValueError", "{vmem_limit_bytes=} must be positive.",
     "static_validate_inputs", "kernel.py:284-285", "kernel.py:285"},
    {Msg::kNumSeqsTooLarge, "num_seqs_too_large", "ValueError",
     "{num_seqs[0]=} must be less or equal to {max_num_seqs=}", "dynamic_validate_inputs",
     "kernel.py:192-193", "kernel.py:193"},
    {Msg::kMaxOfEmpty, "max_of_empty", "ValueError",
     "zero-size array to reduction operation max which has no identity",
     "jnp.max (jax/_src/numpy/reductions.py:130)", "reductions.py:130", "dynamic_validate_inputs kernel.py:194"},
    {Msg::kPagesPerSeqTooSmall, "pages_per_seq_too_small", "ValueError",
     "{pages_per_seq=} must be greater or equal to {min_pages_per_seq=} given {max_kv_len=} and {page_size=}.",
     "dynamic_validate_inputs", "kernel.py:196-200", "kernel.py:197"},
    {Msg::kTotalQTokens, "total_q_tokens", "ValueError",
     "Total q tokens {cu_q_lens[num_seqs[0]]} must be less or equal to {max_num_batched_tokens=}.",
     "dynamic_validate_inputs", "kernel.py:201-205", "kernel.py:202"},
    {Msg::kQLenExceedsKvLen, "q_len_exceeds_kv_len", "ValueError",
     "{q_len=} must be less or equal to {kv_len=} at sequence {i}.", "dynamic_validate_inputs",
     "kernel.py:206-212", "kernel.py:210"},
    {Msg::kIndexerType, "indexer_type", "TypeError",
     "Indexer must have integer or boolean type, got indexer with type {idx.dtype}",
     "jnp indexing (jax/_src/numpy/indexing.py:86-87)", "indexing.py:86-87",
     "dynamic_validate_inputs kernel.py:201, a float num_seqs (read from the JAX source, not replayed)"},
    {Msg::kTruthValueEmpty, "truth_value_empty", "ValueError",
     "The truth value of an empty array is ambiguous. Use `array.size > 0` to check that an array is not "
     "empty.",
     "bool(Array) (jax/_src/core.py:933-936)", "core.py:935",
     "dynamic_validate_inputs kernel.py:201, a bool num_seqs of False (read from the JAX source, not "
     "replayed)"},
    {Msg::kTruthValueAmbiguous, "truth_value_ambiguous", "ValueError",
     "The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()",
     "bool(Array) (jax/_src/core.py:937-939)", "core.py:938",
     "dynamic_validate_inputs kernel.py:201, a bool num_seqs of True (read from the JAX source, not "
     "replayed)"},
    {Msg::kNotTileable, "not_tileable", "ValueError",
     "Not implemented: {num_combined_kv_heads=} can not be XLA fully tiled.", "get_min_heads_per_blk",
     "kernel.py:696-699", "kernel.py:697"},
    {Msg::kAssertMinHeadsCombinedEven, "assert_min_heads_combined_even", "AssertionError", "",
     "get_min_heads_per_blk", "kernel.py:700",
     "only by a direct call (ragged_paged_attention validates first)"},
    {Msg::kAssertMinHeadsDivisible, "assert_min_heads_divisible", "AssertionError", "", "get_min_heads_per_blk",
     "kernel.py:702", "only by a direct call (ragged_paged_attention validates first)"},
    {Msg::kAssertQHeadsPerBlk, "assert_q_heads_per_blk", "AssertionError", "", "ragged_paged_attention",
     "kernel.py:821", "assert num_q_heads_per_blk % num_q_heads_per_kv_head == 0"},
    {Msg::kIntegerDivisionByZero, "integer_division_by_zero", "ZeroDivisionError",
     "integer division or modulo by zero", "int // 0 (CPython 3.11 longobject.c, l_divmod)", "CPython 3.11",
     "kernel.py:703 (direct call), 822 (num_q_heads_per_blk 0)"},
    {Msg::kTpuVersionTooOld, "tpu_version_too_old", "NotImplementedError", "TPU version must be 4 or higher.",
     "get_tuned_block_sizes", "tuned_block_sizes.py:1457-1458",
     "ragged_paged_attention kernel.py:806-816, a block size left None"},
    {Msg::kAssertTpuVersionMatch, "assert_tpu_version_match", "AssertionError", "{kind}", "get_tpu_version",
     "tuned_block_sizes.py:1432", "assert match is not None, kind"},
    {Msg::kAssertNextPowerOf2Positive, "assert_next_power_of_2_positive", "AssertionError", "",
     "next_power_of_2 (from simplify_key)", "tuned_block_sizes.py:1394",
     "simplify_key tuned_block_sizes.py:1415-1420, an argument <= 0"},
    {Msg::kConcatenateEmpty, "concatenate_empty", "ValueError", "Need at least one array to concatenate.",
     "jnp.concatenate (jax/_src/numpy/lax_numpy.py:4572-4573)", "lax_numpy.py:4573",
     "ref_ragged_paged_attention kernel.py:148, num_seqs[0] <= 0"},
    {Msg::kOnlyIntegerScalarIndex, "only_integer_scalar_index", "TypeError",
     "Only integer scalar arrays can be converted to a scalar index.",
     "operator.index(Array) (jax/_src/core.py:928-930)", "core.py:930",
     "ref_ragged_paged_attention kernel.py:111, range() of a non-integer num_seqs (read from the JAX source, "
     "not replayed)"},
}};

constexpr bool table_in_enum_order() {
  for (size_t k = 0; k < kTemplates.size(); ++k)
    if (static_cast<size_t>(kTemplates[k].id) != k) return false;
  return true;
}
static_assert(table_in_enum_order(), "kTemplates must list Msg in enum order");

}  // namespace

std::span<const MessageTemplate> message_templates() { return kTemplates; }

const MessageTemplate& message_template(Msg id) { return kTemplates[static_cast<size_t>(id)]; }

std::string format_message(Msg id, std::initializer_list<std::string> values) {
  const std::string_view t = message_template(id).text;
  std::string out;
  auto value = values.begin();
  size_t k = 0;
  while (k < t.size()) {
    if (t[k] != '{') {
      out += t[k++];
      continue;
    }
    const size_t close = t.find('}', k);
    if (close == std::string_view::npos) throw std::logic_error("unterminated placeholder in message template");
    const std::string_view expr = t.substr(k + 1, close - k - 1);
    if (value == values.end()) throw std::logic_error("too few values for message template");
    // f"{x=}" prints the expression text, '=', then repr(x).
    if (expr.ends_with('=')) out += expr;
    out += *value++;
    k = close + 1;
  }
  if (value != values.end()) throw std::logic_error("too many values for message template");
  return out;
}

void raise_py(Msg id, std::initializer_list<std::string> values) {
  throw PyError(std::string(message_template(id).cls), format_message(id, values));
}

}  // namespace rpa
