// Test helper: builds small attention calls (CallArgs plus q and kv_pages contents) value by value.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "oracle/call_args.h"

namespace rpa::testing {

inline IndexArg int32_arg(std::vector<int64_t> shape, std::vector<int64_t> data) {
  IndexArg a;
  a.shape = std::move(shape);
  a.dtype = DType::kInt32;
  a.has_data = true;
  a.data = std::move(data);
  return a;
}

// q: [T, Hq, D]; kv_pages: [P, page_size, 2 * Hkv, D]; zero contents.
struct Attn {
  CallArgs a;
  std::vector<float> q, kv;
  int64_t T, Hq, D, P, ps, Hkv;

  Attn(DType q_dtype, DType kv_dtype, int64_t tokens, int64_t q_heads, int64_t head_dim, int64_t pages,
       int64_t page_size, int64_t kv_heads, std::vector<int64_t> kv_lens, std::vector<int64_t> page_indices,
       std::vector<int64_t> cu_q_lens, int64_t num_seqs)
      : T(tokens), Hq(q_heads), D(head_dim), P(pages), ps(page_size), Hkv(kv_heads) {
    a.q.shape = {T, Hq, D};
    a.q.dtype = q_dtype;
    a.kv_pages.shape = {P, ps, 2 * Hkv, D};
    a.kv_pages.dtype = kv_dtype;
    const int64_t S = static_cast<int64_t>(kv_lens.size());
    const int64_t pps = S == 0 ? static_cast<int64_t>(page_indices.size()) : static_cast<int64_t>(page_indices.size()) / S;
    a.kv_lens = int32_arg({S}, std::move(kv_lens));
    a.page_indices = int32_arg({S, pps}, std::move(page_indices));
    a.cu_q_lens = int32_arg({S + 1}, std::move(cu_q_lens));
    a.num_seqs = int32_arg({1}, {num_seqs});
    q.assign(static_cast<size_t>(T * Hq * D), 0.0f);
    kv.assign(static_cast<size_t>(P * ps * 2 * Hkv * D), 0.0f);
  }
  float& qv(int64_t t, int64_t h, int64_t d) { return q[static_cast<size_t>((t * Hq + h) * D + d)]; }
  // K (is_k) or V of KV head g in physical page `page`, slot `slot`.
  float& kvv(int64_t page, int64_t slot, int64_t g, bool is_k, int64_t d) {
    const int64_t head = 2 * g + (is_k ? 0 : 1);
    return kv[static_cast<size_t>(((page * ps + slot) * 2 * Hkv + head) * D + d)];
  }
  // Key row c of a sequence laid out on consecutive pages from `first_page`.
  float& key(int64_t first_page, int64_t c, int64_t g, bool is_k, int64_t d) {
    return kvv(first_page + c / ps, c % ps, g, is_k, d);
  }
};

inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

}  // namespace rpa::testing
