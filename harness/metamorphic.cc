// The metamorphic case transformations behind harness/metamorphic.h.
#include "harness/metamorphic.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

namespace rpa {
namespace {

// The case with its q / kv contents materialised as explicit data, so a
// transformation can edit them.
Case with_data(const Case& c) {
  Case d = c;
  d.q_content.values = materialise_q(c);
  d.q_content.source = ContentSource::kData;
  d.kv_content.values = materialise_kv(c);
  d.kv_content.source = ContentSource::kData;
  return d;
}

float poison_value(DType d) {
  return dtype_info(d).kind == DTypeKind::kFloat ? std::numeric_limits<float>::quiet_NaN()
                                                 : static_cast<float>(max_finite(d));
}

struct Dims {
  int64_t tokens, q_heads, head_dim, pages, page_size, combined, seqs, pages_per_seq;
  explicit Dims(const Case& c)
      : tokens(c.call.q.shape[0]),
        q_heads(c.call.q.shape[1]),
        head_dim(c.call.q.shape[2]),
        pages(c.call.kv_pages.shape[0]),
        page_size(c.call.kv_pages.shape[1]),
        combined(c.call.kv_pages.shape[2]),
        seqs(c.call.page_indices.shape[0]),
        pages_per_seq(c.call.page_indices.shape[1]) {}
  int64_t page_elems() const { return page_size * combined * head_dim; }
};

}  // namespace

int64_t valid_sequences(const Case& c) {
  const int64_t n = c.call.num_seqs.data.at(0);
  return std::clamp<int64_t>(n, 0, c.call.page_indices.shape[0]);
}

Case permute_pages(const Case& c, uint64_t seed) {
  Case d = with_data(c);
  const Dims dm(c);
  std::vector<int64_t> perm(static_cast<size_t>(dm.pages));
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng(seed);
  for (int64_t i = dm.pages - 1; i > 0; --i) std::swap(perm[i], perm[int64_t(rng() % uint64_t(i + 1))]);
  std::vector<float> moved(d.kv_content.values.size());
  for (int64_t p = 0; p < dm.pages; ++p)
    std::copy_n(d.kv_content.values.begin() + p * dm.page_elems(), dm.page_elems(),
                moved.begin() + perm[p] * dm.page_elems());
  d.kv_content.values = std::move(moved);
  for (auto& e : d.call.page_indices.data)
    if (e >= 0 && e < dm.pages) e = perm[e];
  d.id = c.id + "-permuted";
  return d;
}

Case repeat_kv_heads(const Case& c, int times) {
  Case d = with_data(c);
  const Dims dm(c);
  const int64_t kv_heads = dm.combined / 2, new_combined = dm.combined * times;
  std::vector<float> out(size_t(dm.pages * dm.page_size * new_combined * dm.head_dim));
  for (int64_t slot = 0; slot < dm.pages * dm.page_size; ++slot)
    for (int64_t h = 0; h < kv_heads; ++h)
      for (int j = 0; j < times; ++j)
        for (int kv = 0; kv < 2; ++kv) {
          const float* from = d.kv_content.values.data() + (slot * dm.combined + 2 * h + kv) * dm.head_dim;
          float* to = out.data() + (slot * new_combined + 2 * (h * times + j) + kv) * dm.head_dim;
          std::copy_n(from, dm.head_dim, to);
        }
  d.kv_content.values = std::move(out);
  d.call.kv_pages.shape[2] = new_combined;
  d.id = c.id + "-kvx" + std::to_string(times);
  return d;
}

std::pair<int64_t, int64_t> sequence_rows(const Case& c, int64_t s) {
  return {c.call.cu_q_lens.data[s], c.call.cu_q_lens.data[s + 1]};
}

Case single_sequence(const Case& c, int64_t s) {
  Case d = with_data(c);
  const Dims dm(c);
  const auto [begin, end] = sequence_rows(c, s);
  const int64_t q_len = end - begin, tokens = std::max<int64_t>(1, q_len);
  const int64_t row = dm.q_heads * dm.head_dim;
  std::vector<float> q(size_t(tokens * row), poison_value(c.call.q.dtype));
  std::copy_n(d.q_content.values.begin() + begin * row, q_len * row, q.begin());
  d.q_content.values = std::move(q);
  d.call.q.shape[0] = tokens;
  d.call.page_indices.shape[0] = 1;
  d.call.page_indices.data.assign(c.call.page_indices.data.begin() + s * dm.pages_per_seq,
                                  c.call.page_indices.data.begin() + (s + 1) * dm.pages_per_seq);
  d.call.kv_lens.shape = {1};
  d.call.kv_lens.data = {c.call.kv_lens.data[s]};
  d.call.cu_q_lens.shape = {2};
  d.call.cu_q_lens.data = {0, q_len};
  d.call.num_seqs.data = {1};
  d.id = c.id + "-seq" + std::to_string(s);
  return d;
}

Case poison_unread(const Case& c) {
  Case d = with_data(c);
  const Dims dm(c);
  const int64_t n = valid_sequences(c);
  const auto& pi = c.call.page_indices.data;
  const auto& kv_lens = c.call.kv_lens.data;
  // Slots each page must keep: the largest prefix any valid sequence reads.
  std::vector<int64_t> keep(size_t(dm.pages), 0);
  for (int64_t s = 0; s < n; ++s)
    for (int64_t p = 0; p < dm.pages_per_seq && p * dm.page_size < kv_lens[s]; ++p) {
      const int64_t page = pi[s * dm.pages_per_seq + p];
      if (page >= 0 && page < dm.pages)
        keep[page] = std::max(keep[page], std::min(dm.page_size, kv_lens[s] - p * dm.page_size));
    }
  const float kv_poison = poison_value(c.call.kv_pages.dtype);
  const int64_t slot_elems = dm.combined * dm.head_dim;
  for (int64_t page = 0; page < dm.pages; ++page)
    std::fill(d.kv_content.values.begin() + page * dm.page_elems() + keep[page] * slot_elems,
              d.kv_content.values.begin() + (page + 1) * dm.page_elems(), kv_poison);
  const int64_t used_rows = n > 0 ? c.call.cu_q_lens.data[n] : 0;
  const int64_t row = dm.q_heads * dm.head_dim;
  std::fill(d.q_content.values.begin() + std::clamp<int64_t>(used_rows, 0, dm.tokens) * row, d.q_content.values.end(),
            poison_value(c.call.q.dtype));
  d.id = c.id + "-poisoned";
  return d;
}

}  // namespace rpa
