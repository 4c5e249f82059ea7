// Encoding the ABI's float32 KV values into native storage, with the per-slot statistics.
#include "kernels/fast/native_kv.h"

#include <sys/mman.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/abi_dtype.h"

namespace rpa::fast {

void* huge_page_alloc(size_t bytes) {
  constexpr size_t kHuge = size_t(2) << 20;
  if (bytes < kHuge) {
    void* p = std::malloc(bytes ? bytes : 1);
    if (!p) throw std::bad_alloc();
    return p;
  }
  const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(kHuge, rounded);
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  (void)madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure leaves normal pages
#endif
  return p;
}

void huge_page_free(void* p) noexcept { std::free(p); }

int native_elem_bytes(DType d) {
  switch (d) {
    case DType::kFloat32: return 4;
    case DType::kBFloat16:
    case DType::kFloat16: return 2;
    default: return 1;  // float8, int8, int4 (one value a byte)
  }
}

int64_t native_slot_bytes(int64_t elems, int elem_bytes, bool pad) {
  const int64_t bytes = elems * elem_bytes;
  return pad && bytes > 0 && bytes % 2048 == 0 ? bytes + 64 : bytes;
}

NativeKv encode_kv(const rpa_problem& p, bool pad_slots) {
  NativeKv kv;
  kv.dtype = dtype_of(p.kv_dtype);
  kv.total_num_pages = p.total_num_pages;
  kv.page_size = p.page_size;
  kv.num_combined_kv_heads = p.num_combined_kv_heads;
  kv.head_dim = p.head_dim;
  kv.elem_bytes = native_elem_bytes(kv.dtype);
  const int64_t slots = p.total_num_pages * p.page_size;
  const int64_t per_slot = kv.slot_elems();
  kv.slot_bytes = native_slot_bytes(per_slot, kv.elem_bytes, pad_slots);
  kv.bytes.resize(static_cast<size_t>(slots * kv.slot_bytes));  // padding zeroed
  kv.nonfinite.assign(static_cast<size_t>(slots), 0);
  kv.k_absmax.assign(static_cast<size_t>(slots), 0.0f);
  kv.v_absmax.assign(static_cast<size_t>(slots), 0.0f);
  for (int64_t s = 0; s < slots; ++s) {
    const float* src = p.kv_pages + s * per_slot;
    uint8_t* dst = kv.bytes.data() + s * kv.slot_bytes;
    float kmax = 0.0f, vmax = 0.0f;
    bool bad = false;
    for (int64_t e = 0; e < per_slot; ++e) {
      const float x = src[e];
      if (!std::isfinite(x)) {
        bad = true;
      } else if ((e / p.head_dim) % 2 == 0) {  // K lives at even combined heads
        kmax = std::fmax(kmax, std::fabs(x));
      } else {
        vmax = std::fmax(vmax, std::fabs(x));
      }
      switch (kv.elem_bytes) {
        case 4: std::memcpy(dst + 4 * e, &x, 4); break;
        case 2: {
          const uint16_t b = static_cast<uint16_t>(encode(kv.dtype, x));
          std::memcpy(dst + 2 * e, &b, 2);
          break;
        }
        default: {
          uint32_t b = encode(kv.dtype, x);
          if (kv.dtype == DType::kInt4) b = (b & 0x8) ? (b | 0xF0) : (b & 0x0F);  // sign-extend to a byte
          dst[e] = static_cast<uint8_t>(b);
        }
      }
    }
    kv.nonfinite[s] = bad ? 1 : 0;
    kv.k_absmax[s] = kmax;
    kv.v_absmax[s] = vmax;
  }
  return kv;
}

}  // namespace rpa::fast
