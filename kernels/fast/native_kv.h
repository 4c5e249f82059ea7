// The KV cache as a serving system stores it: native-dtype bytes plus per-token statistics the fast kernel reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "oracle/dtype.h"
#include "rpa/rpa.h"

namespace rpa::fast {

// Large buffers on transparent huge pages where the OS allows it
// (madvise): a KV head's rows are a page-row apart (4 KiB and more), so a
// kernel touching one row per 4 KiB page would otherwise miss the TLB on
// nearly every row.
void* huge_page_alloc(size_t bytes);
void huge_page_free(void* p) noexcept;

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(huge_page_alloc(n * sizeof(T))); }
  void deallocate(T* p, size_t) noexcept { huge_page_free(p); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const { return true; }
};

// kv_pages [total_num_pages, page_size, num_combined_kv_heads, head_dim] in
// the KV dtype's own storage: float32 as float, bfloat16 / float16 as their
// 16-bit patterns, float8 as their 8-bit patterns, int8 as int8, int4 one
// sign-extended value per byte. The ABI hands the kernel float32 values; a
// server's cache holds these bytes, so the bench times the kernel on them.
struct NativeKv {
  DType dtype = DType::kFloat32;
  int64_t total_num_pages = 0, page_size = 0, num_combined_kv_heads = 0, head_dim = 0;
  int elem_bytes = 4;
  std::vector<uint8_t, HugePageAllocator<uint8_t>> bytes;
  // Statistics per (page, token) slot, kept when the cache is written (one
  // comparison per element). The kernel skips a masked block only when it
  // can prove the skip exact; these make the proof cheap:
  //   nonfinite[slot]: some K or V element of the slot is NaN or +-Inf (a
  //     NaN key inside kv_len, even a masked one, makes the reference's row
  //     NaN, so such a sequence is computed in full);
  //   k_absmax[slot], v_absmax[slot]: max |element| over the slot's K heads
  //     and over its V heads (finite ones); with k_scale / v_scale they also
  //     tell whether a dequantized element can overflow to Inf.
  std::vector<uint8_t> nonfinite;
  std::vector<float> k_absmax, v_absmax;
  // Bytes from one (page, token) slot to the next: its elements, padded by
  // one cache line where they fill a multiple of 2 KiB (native_slot_bytes).
  int64_t slot_bytes = 0;

  int64_t slot_elems() const { return num_combined_kv_heads * head_dim; }
};

// Sizes of an element of the KV dtype in NativeKv::bytes.
int native_elem_bytes(DType d);

// The slot stride for slots of `elems` elements of `elem_bytes` each,
// `pad`: one 64-byte line more where the slot fills a multiple of 2 KiB.
// A KV head's rows lie a slot apart, so with a stride of 4 KiB (the bench's
// bfloat16 shape) every key's row of a head maps to the same L1 sets, and a
// block of 16 keys wants 16 lines of a 12-way set.
int64_t native_slot_bytes(int64_t elems, int elem_bytes, bool pad);

// Encodes the ABI's float32 KV values (each exactly a value of p.kv_dtype)
// with the dtype model's encode() and computes the statistics. `pad_slots`:
// slots padded as native_slot_bytes says (false: packed, for tests that
// both layouts give the same results).
NativeKv encode_kv(const rpa_problem& p, bool pad_slots = true);

}  // namespace rpa::fast
