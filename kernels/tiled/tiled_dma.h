// The KV path from HBM to VMEM: pages as packed 32-bit words, and the two VMEM buffers with their async copies checked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tiled/tiled_codec.h"
#include "kernels/tiled/tiled_config.h"
#include "kernels/tiled/tiled_diagnostics.h"
#include "kernels/tiled/tiled_geometry.h"
#include "kernels/tiled/tiled_scalars.h"
#include "rpa/rpa.h"

namespace rpa::tiled {

// kv_pages as HBM holds them: a sub-32-bit array packs kv_packing
// consecutive rows of its second-minor dimension (the combined heads) into
// one word (rpa::pack_word), so [P, page_size, Hc / packing, D] words.
class PackedHbm {
 public:
  PackedHbm(const rpa_problem& p, const Geometry& g, const KvCodec& codec);
  // The words_per_token * head_dim words of one token slot of one page.
  const uint32_t* token(int64_t page, int64_t slot) const {
    return words_.data() + (page * page_size_ + slot) * token_words_;
  }

 private:
  int64_t page_size_, token_words_;
  std::vector<uint32_t> words_;
};

// One of kv_bufs[2] (kernel.py:847-856) with the state of its semaphore.
struct VmemKvBuffer {
  // [num_kv_pages_per_blk, page_size, words_per_token_blk, head_dim].
  std::vector<uint32_t> words;
  bool in_flight = false;  // a copy was started and not yet waited
  KvBlockId holds{};       // the block the last copy into it brought
  std::vector<int64_t> pages;  // the HBM pages that copy read (-1: out of bounds)
};

// kv_bufs + sems: MultiPageAsyncCopyDescriptor (kernel.py:35-70) built by
// create_kv_async_copy_descriptors (kernel.py:338-356). Copies complete at
// start(); wait() checks that the buffer holds the block its descriptor names.
class KvDma {
 public:
  // `hbm` null: track blocks and pages only (schedule audits), copy no data.
  KvDma(const Geometry& g, const PackedHbm* hbm, ScalarTables& scalars, Diagnostics& diags);
  void start(const KvBlockId& id, int64_t buf);
  // The buffer's words as the TPU would see them after the wait: on a
  // mismatch, the block that was actually copied in.
  const VmemKvBuffer& wait(const KvBlockId& id, int64_t buf);
  // At the end of the kernel: copies started and never waited.
  void finish();

 private:
  // The HBM page each of the descriptor's copies reads (kernel.py:51-58):
  // page_idx = select(page_idx < end_page_idx, page_idx, 0), then
  // page_indices[seq, page_idx]; -1 where that page is out of bounds.
  std::vector<int64_t> descriptor_pages(const KvBlockId& id);
  void copy(const KvBlockId& id, VmemKvBuffer& dst);
  static std::string describe(const KvBlockId& id, const std::vector<int64_t>& pages);

  const Geometry& g_;
  const PackedHbm* hbm_;
  ScalarTables& scalars_;
  Diagnostics& diags_;
  VmemKvBuffer bufs_[2];
};

}  // namespace rpa::tiled
