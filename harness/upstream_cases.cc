// Builds the upstream test file's inputs (_test_ragged_paged_attention) as cases with seeded contents.
#include "harness/upstream_cases.h"

#include <algorithm>
#include <limits>
#include <random>
#include <stdexcept>

#include "harness/data_seed.h"

namespace rpa {
namespace {

float padding_value(DType d) {
  if (dtype_info(d).kind == DTypeKind::kFloat) return std::numeric_limits<float>::quiet_NaN();
  return static_cast<float>(max_finite(d));
}

}  // namespace

Case upstream_case(const std::string& id, const SeqLens& seq_lens, int64_t num_q_heads, int64_t num_kv_heads,
                   int64_t head_dim, int64_t page_size, DType q_dtype, DType kv_dtype,
                   const UpstreamOptions& o) {
  if (seq_lens.empty() || page_size <= 0) throw std::invalid_argument("upstream_case: no sequences or page size");
  std::vector<int64_t> cu{0}, kv_lens;
  for (const auto& [q_len, kv_len] : seq_lens) {
    cu.push_back(cu.back() + q_len);
    kv_lens.push_back(kv_len);
  }
  const int64_t tokens = std::max(cu.back(), o.max_num_batched_tokens);
  const int64_t max_num_seq = std::max<int64_t>(static_cast<int64_t>(seq_lens.size()), o.max_num_seq);
  const int64_t max_kv_len = *std::max_element(kv_lens.begin(), kv_lens.end());
  const int64_t pages_per_seq = (max_kv_len + page_size - 1) / page_size;
  const int64_t hc = 2 * num_kv_heads;
  const int64_t page_elems = page_size * hc * head_dim;

  Case c;
  c.id = id;
  c.entry = Entry::kReference;
  c.where = "upstream:" + id;
  CallArgs& a = c.call;
  a.q.shape = {tokens, num_q_heads, head_dim};
  a.q.dtype = q_dtype;
  a.kv_pages.shape = {o.num_pages, page_size, hc, head_dim};
  a.kv_pages.dtype = kv_dtype;

  const size_t kv_elems = static_cast<size_t>(o.num_pages * page_elems);
  if (o.kv_values != nullptr && o.kv_values->size() != kv_elems)
    throw std::invalid_argument("upstream_case: kv_values do not have the pages' geometry");
  std::vector<float> kv = o.kv_values != nullptr ? *o.kv_values : std::vector<float>(kv_elems, padding_value(kv_dtype));
  std::vector<int64_t> page_indices;
  int64_t page_cnt = 0;
  for (int64_t kv_len : kv_lens) {
    const int64_t pages = (kv_len + page_size - 1) / page_size;
    if (page_cnt + pages > o.num_pages) throw std::invalid_argument("upstream_case: not enough pages");
    // The sequence's kv_len rows fill its pages from the start; the rest of
    // its last page stays padding (jnp.pad with NaN, test lines 97-101).
    const int64_t begin = page_cnt * page_elems, end = begin + kv_len * hc * head_dim;
    if (o.kv_values == nullptr)
      for (int64_t i = begin; i < end; ++i)
        kv[static_cast<size_t>(i)] = seeded_value(kv_dtype, o.seed + 1, static_cast<uint64_t>(i));
    for (int64_t j = 0; j < pages_per_seq; ++j)
      page_indices.push_back(j < pages ? page_cnt + j : std::numeric_limits<int32_t>::min());
    page_cnt += pages;
  }
  for (size_t s = seq_lens.size(); s < static_cast<size_t>(max_num_seq); ++s)
    for (int64_t j = 0; j < pages_per_seq; ++j) page_indices.push_back(std::numeric_limits<int32_t>::min());
  cu.resize(static_cast<size_t>(max_num_seq + 1), 0);
  kv_lens.resize(static_cast<size_t>(max_num_seq), 0);
  a.kv_lens = int32_tensor({max_num_seq}, kv_lens);
  a.page_indices = int32_tensor({max_num_seq, pages_per_seq}, page_indices);
  a.cu_q_lens = int32_tensor({max_num_seq + 1}, cu);
  a.num_seqs = int32_tensor({1}, {static_cast<int64_t>(seq_lens.size())});
  a.sliding_window = o.sliding_window;
  a.soft_cap = o.soft_cap;
  a.k_scale = o.k_scale;
  a.v_scale = o.v_scale;

  c.q_content.source = ContentSource::kData;
  c.q_content.values = seeded_values(q_dtype, o.seed, num_elements(a.q.shape));
  c.kv_content.source = ContentSource::kData;
  c.kv_content.values = std::move(kv);
  return c;
}

SeqLens upstream_seq_lens(std::string_view name) {
  if (name == "basic") return {{192, 328}, {128, 180}, {64, 255}};  // test lines 184, 211
  if (name == "decode_only")                                           // lines 234-251
    return {{1, 18},  {1, 129}, {1, 597}, {1, 122}, {1, 64},   {1, 322}, {1, 463}, {1, 181},
            {1, 1107}, {1, 123}, {1, 31}, {1, 18},  {1, 1229}, {1, 229}, {1, 87},  {1, 1328}};
  if (name == "prefill_only")  // lines 271-288
    return {{5, 18},   {15, 129}, {120, 597}, {100, 122}, {21, 64}, {32, 322}, {251, 463}, {40, 181},
            {64, 1107}, {99, 123}, {10, 31},   {5, 18},    {3, 1229}, {120, 229}, {9, 87},   {2, 1328}};
  if (name == "mixed")  // lines 308-325
    return {{5, 18},  {1, 129}, {120, 597}, {1, 122}, {1, 64},    {32, 322}, {251, 463}, {1, 181},
            {1, 1107}, {99, 123}, {1, 31},   {5, 18},  {3, 1229}, {117, 229}, {1, 87},   {1, 1328}};
  throw std::invalid_argument("upstream_seq_lens: unknown configuration");
}

SeqLens random_seq_lens(int64_t num_seqs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  SeqLens lens;
  for (int64_t i = 0; i < num_seqs; ++i) {
    const int64_t q_len = 1 + static_cast<int64_t>(rng() % 99);
    lens.emplace_back(q_len, q_len + static_cast<int64_t>(rng() % 50));
  }
  return lens;
}

SeqLens scaled_seq_lens(const SeqLens& lens, int64_t divisor) {
  SeqLens out;
  for (const auto& [q, kv] : lens) {
    const int64_t nkv = std::max<int64_t>(1, kv / divisor);
    out.emplace_back(std::clamp<int64_t>(q / divisor, 1, nkv), nkv);
  }
  return out;
}

}  // namespace rpa
