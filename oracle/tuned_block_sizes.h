// The block-size table of tuned_block_sizes.py and the device-kind parsing that selects a row of it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace rpa {

// One row of TUNED_BLOCK_SIZES (tuned_block_sizes.py:37-1382): a device name
// ("TPU v6", "TPU v5"), the simplified key, and the tuned block sizes.
struct TunedBlockSizeRow {
  std::string_view device;
  std::string_view q_dtype, kv_dtype;
  int64_t num_q_heads_per_blk, num_kv_heads_per_blk, head_dim, page_size, max_num_batched_tokens,
      max_model_len;
  int64_t num_kv_pages_per_block, num_queries_per_block;
};

std::span<const TunedBlockSizeRow> tuned_block_size_rows();

// The table's value for a simplified key, or nullopt when the key is absent.
struct TunedKey {
  std::string device;
  std::string q_dtype, kv_dtype;
  int64_t num_q_heads_per_blk, num_kv_heads_per_blk, head_dim, page_size, max_num_batched_tokens,
      max_model_len;
};
std::optional<std::pair<int64_t, int64_t>> lookup_tuned_block_sizes(const TunedKey& key);

// next_power_of_2 (tuned_block_sizes.py:1385-1397): AssertionError when
// x <= 0. Results above 2^62 saturate to INT64_MAX (no table key is that
// large, and the value is only ever looked up).
int64_t next_power_of_2(__int128 x);

// get_tpu_version (tuned_block_sizes.py:1424-1433) for the device whose
// device_kind is `kind`: -1 off TPU; 7 for "TPU7x"; else the number after
// "TPU" (re.search(r'TPU\s*v?(\d+)', kind, re.IGNORECASE)), saturating at
// INT64_MAX; AssertionError(kind) when "TPU" is in the kind but the
// pattern does not match.
int64_t get_tpu_version(std::string_view kind);

// get_device_name (tuned_block_sizes.py:1436-1442) with num_devices None:
// "TPU v<digits>" when the pattern matches, else the first two
// whitespace-separated words.
std::string get_device_name(std::string_view kind);

}  // namespace rpa
