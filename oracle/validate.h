// The checks kernel.py makes before the kernel runs: static and dynamic validation, head blocking, block sizes.
#pragma once

#include <cstdint>
#include <string>

#include "oracle/call_args.h"
#include "oracle/dtype.h"
#include "oracle/py_value.h"

namespace rpa {

// All throw PyError with the exact class and str(e) Python would raise.

// static_validate_inputs, kernel.py:216-287 (every option in CallArgs).
void static_validate_inputs(const CallArgs& a);
// The reference's call of it (kernel.py:88-101): the block-size options
// are not passed, so they are not checked.
void static_validate_reference_inputs(const CallArgs& a);
// dynamic_validate_inputs, kernel.py:152-212 (needs index data).
void dynamic_validate_inputs(const CallArgs& a);

struct HeadBlocks {
  int64_t num_q_heads_per_blk = 0;
  int64_t num_combined_kv_heads_per_blk = 0;
};
// get_min_heads_per_blk, kernel.py:683-715.
HeadBlocks get_min_heads_per_blk(int64_t num_q_heads, int64_t num_combined_kv_heads, DType q_dtype,
                                 DType kv_dtype);

struct BlockSizes {
  int64_t num_kv_pages_per_blk = 0;
  int64_t num_q_per_blk = 0;
};
// get_tuned_block_sizes, tuned_block_sizes.py:1445-1481, for the device
// whose jax.devices()[0].device_kind is `device_kind`.
BlockSizes get_tuned_block_sizes(DType q_dtype, DType kv_dtype, int64_t num_q_heads_per_blk,
                                 int64_t num_kv_heads_per_blk, int64_t head_dim, int64_t page_size,
                                 int64_t max_num_batched_tokens, int64_t pages_per_seq,
                                 const std::string& device_kind);

struct KernelConfig {
  HeadBlocks heads;
  BlockSizes blocks;
};
// What ragged_paged_attention does before pallas_call (kernel.py:777-823):
// static validation, head blocking, block sizes and the grid's asserts.
// `default_device_kind` applies when a.device_kind is empty.
KernelConfig kernel_entry_config(const CallArgs& a, const std::string& default_device_kind);

// ragged_paged_attention's preamble (kernel.py:777-822) with the block sizes
// as Python holds them: when both options are given they pass through
// unchanged, so they may be a bool, a float or an int beyond int64.
struct KernelEntry {
  HeadBlocks heads;
  PyValue num_kv_pages_per_blk, num_q_per_blk;
};
KernelEntry ragged_paged_attention_entry(const CallArgs& a, const std::string& default_device_kind);

// ref_ragged_paged_attention up to its loop (kernel.py:88-111, 148): the
// static validation it makes, then range(num_seqs[0]) (TypeError for a
// non-integer num_seqs). Returns the number of sequences the loop visits;
// when it visits none, raises the ValueError jnp.concatenate([]) raises at
// kernel.py:148. Needs num_seqs data (std::invalid_argument otherwise).
int64_t reference_entry_checks(const CallArgs& a);

}  // namespace rpa
