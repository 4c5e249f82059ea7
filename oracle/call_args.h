// The arguments of one call to the mirrored Python entry points: shapes, dtypes, index values and keyword options.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "oracle/dtype.h"
#include "oracle/py_value.h"

namespace rpa {

// q or kv_pages as validation sees them: any rank, contents not needed.
struct ArrayArg {
  std::vector<int64_t> shape;
  DType dtype = DType::kFloat32;
};

// kv_lens, page_indices, cu_q_lens, num_seqs: validation reads their values.
// Values are as written (representable in `dtype`), row-major; `has_data`
// is false when the case omits them (enough for static validation).
struct IndexArg {
  std::vector<int64_t> shape;
  DType dtype = DType::kInt32;
  bool has_data = false;
  std::vector<int64_t> data;
};

// Product of the dimensions, saturating at INT64_MAX.
int64_t num_elements(const std::vector<int64_t>& shape);

// An int32 index tensor holding `data` (row-major).
IndexArg int32_tensor(std::vector<int64_t> shape, std::vector<int64_t> data);

struct CallArgs {
  ArrayArg q, kv_pages;
  IndexArg kv_lens, page_indices, cu_q_lens, num_seqs;
  // Keyword options exactly as written: None when null or absent, so the
  // Python default applies.
  PyValue sm_scale, sliding_window, soft_cap, mask_value, k_scale, v_scale;
  PyValue num_kv_pages_per_block, num_queries_per_block, vmem_limit_bytes;
  // jax.devices()[0].device_kind, for the block-size table.
  std::optional<std::string> device_kind;
};

}  // namespace rpa
