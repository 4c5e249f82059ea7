// Packed HBM pages and the double-buffered, checked async copies of KV blocks.
#include "kernels/tiled/tiled_dma.h"

#include <algorithm>
#include <cstring>

namespace rpa::tiled {
namespace {
std::string num(int64_t v) { return std::to_string(v); }
}  // namespace

PackedHbm::PackedHbm(const rpa_problem& p, const Geometry& g, const KvCodec& codec)
    : page_size_(g.page_size), token_words_(g.words_per_token * g.head_dim) {
  const int64_t tokens = g.total_num_pages * g.page_size;
  words_.assign(size_t(tokens * token_words_), 0u);
  const int packing = g.kv_packing;
  const int64_t hc = g.num_combined_kv_heads, d = g.head_dim;
  uint32_t elems[8];
  for (int64_t t = 0; t < tokens; ++t) {
    const float* src = p.kv_pages + t * hc * d;
    uint32_t* dst = words_.data() + t * token_words_;
    for (int64_t w = 0; w < g.words_per_token; ++w) {
      for (int64_t col = 0; col < d; ++col) {
        // Word (w, col) holds combined heads w*packing .. w*packing+packing-1.
        for (int j = 0; j < packing; ++j) elems[j] = codec.encode(src[(w * packing + j) * d + col]);
        dst[w * d + col] = packing == 1 ? elems[0] : pack_word(codec.dtype(), std::span<const uint32_t>(elems, size_t(packing)));
      }
    }
  }
}

KvDma::KvDma(const Geometry& g, const PackedHbm* hbm, ScalarTables& scalars, Diagnostics& diags)
    : g_(g), hbm_(hbm), scalars_(scalars), diags_(diags) {
  if (hbm_ != nullptr)
    for (auto& b : bufs_) b.words.assign(size_t(g.num_kv_per_blk * g.words_per_token_blk * g.head_dim), 0u);
}

std::vector<int64_t> KvDma::descriptor_pages(const KvBlockId& id) {
  // create_kv_async_copy_descriptors, kernel.py:341-345. pl.cdiv on a traced
  // int32 is lax.div(a + b - 1, b), which truncates toward zero.
  const int64_t start_kv_page_idx = id.kv_blk * g_.num_kv_pages_per_blk;
  const int64_t kv_len = scalars_.kv_len(id.seq);
  const int64_t end_kv_page_idx = std::min(g_.pages_per_seq, (kv_len + g_.page_size - 1) / g_.page_size);
  std::vector<int64_t> pages(size_t(g_.num_kv_pages_per_blk));
  for (int64_t i = 0; i < g_.num_kv_pages_per_blk; ++i) {
    int64_t page_idx = start_kv_page_idx + i;
    page_idx = page_idx < end_kv_page_idx ? page_idx : 0;  // kernel.py:53
    const int64_t page = scalars_.page_index(id.seq, page_idx);
    pages[size_t(i)] = page;
    if (page < 0 || page >= g_.total_num_pages) {
      diags_.add(DiagKind::kOobKvPages, "page_indices[" + num(id.seq) + ", " + num(page_idx) + "] = " + num(page) +
                                            " names a page outside kv_pages [0, " + num(g_.total_num_pages) +
                                            ") (KV block " + num(id.kv_blk) + " of head block " + num(id.heads_blk) +
                                            "); the emulation copies zeros");
      pages[size_t(i)] = -1;
    }
  }
  return pages;
}

void KvDma::copy(const KvBlockId& id, VmemKvBuffer& dst) {
  dst.pages = descriptor_pages(id);
  dst.holds = id;
  if (hbm_ == nullptr) return;
  // kv_pages_hbm_ref.at[:, :, pl.ds(heads_start, Hc_blk), :]: whole words,
  // since heads_start and Hc_blk are multiples of the packing.
  const int64_t word0 = id.heads_blk * g_.words_per_token_blk;
  const int64_t row_words = g_.words_per_token_blk * g_.head_dim;
  for (int64_t i = 0; i < g_.num_kv_pages_per_blk; ++i) {
    const int64_t page = dst.pages[size_t(i)];
    for (int64_t s = 0; s < g_.page_size; ++s) {
      uint32_t* out = dst.words.data() + (i * g_.page_size + s) * row_words;
      if (page < 0 || word0 + g_.words_per_token_blk > g_.words_per_token) {
        std::memset(out, 0, size_t(row_words) * sizeof(uint32_t));
        continue;
      }
      std::memcpy(out, hbm_->token(page, s) + word0 * g_.head_dim, size_t(row_words) * sizeof(uint32_t));
    }
  }
}

std::string KvDma::describe(const KvBlockId& id, const std::vector<int64_t>& pages) {
  std::string s = "(head block " + num(id.heads_blk) + ", seq " + num(id.seq) + ", KV block " + num(id.kv_blk) + "; pages [";
  for (size_t i = 0; i < pages.size(); ++i) s += (i ? " " : "") + num(pages[i]);
  return s + "])";
}

void KvDma::start(const KvBlockId& id, int64_t buf) {
  VmemKvBuffer& b = bufs_[buf & 1];
  const bool overwrites = b.in_flight;
  const KvBlockId old = b.holds;
  const std::vector<int64_t> old_pages = b.pages;
  copy(id, b);
  if (overwrites)
    diags_.add(DiagKind::kCopyOverwritten, "a copy of " + describe(id, b.pages) + " into buffer " + num(buf) +
                                               " started while the copy of " + describe(old, old_pages) +
                                               " was never waited");
  b.in_flight = true;
}

const VmemKvBuffer& KvDma::wait(const KvBlockId& id, int64_t buf) {
  VmemKvBuffer& b = bufs_[buf & 1];
  // The waiting descriptor is built anew (kernel.py:613-615) and reads the
  // scalar tables again.
  const std::vector<int64_t> want = descriptor_pages(id);
  if (!b.in_flight) {
    diags_.add(DiagKind::kWaitWithoutCopy, "wait for " + describe(id, want) + " on buffer " + num(buf) +
                                               " with no copy in flight (the TPU would hang); the emulation copies it now");
    copy(id, b);
  } else if (!(b.holds == id)) {
    diags_.add(DiagKind::kPrefetchMismatch,
               "consumed " + describe(id, want) + " from buffer " + num(buf) + ", which holds " + describe(b.holds, b.pages) +
                   (b.pages == want && b.holds.heads_blk == id.heads_blk ? " (same pages and heads: data identical)"
                                                                         : " (the kernel computes with the wrong KV data)"));
  }
  b.in_flight = false;
  return b;
}

void KvDma::finish() {
  for (int i = 0; i < 2; ++i)
    if (bufs_[i].in_flight)
      diags_.add(DiagKind::kCopyNeverWaited, "the copy of " + describe(bufs_[i].holds, bufs_[i].pages) + " into buffer " +
                                                 num(i) + " is still in flight when the kernel ends");
}

}  // namespace rpa::tiled
