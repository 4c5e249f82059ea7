// The seeded case generator behind harness/case_gen.h.
#include "harness/case_gen.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/data_seed.h"

namespace rpa {
namespace {

// The generator's choices: from a seeded engine (random_case), or read
// from bytes (random_case_from_bytes) so that libFuzzer's mutations edit
// the choices themselves - a flipped byte changes a dtype or a length, not
// the whole case. std::uniform_int_distribution differs between standard
// libraries; plain modulo of the engine's output does not (the tiny bias
// is irrelevant here).
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  Rng(const uint8_t* data, size_t size) : data_(data), size_(size), from_bytes_(true) {}
  int64_t below(int64_t n) { return n <= 1 ? 0 : int64_t(next(uint64_t(n - 1)) % uint64_t(n)); }
  int64_t between(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }
  // From bytes, the low end of a draw is "no" (percent of the 100 values
  // still say yes), so the input's missing tail leaves every option out.
  bool chance(int percent) { return from_bytes_ ? below(100) >= 100 - percent : below(100) < percent; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[size_t(below(int64_t(v.size())))]; }
  uint64_t raw() { return next(~uint64_t{0}); }

 private:
  // A value covering [0, max]: the engine's next output, or the next bytes
  // (as many as max needs, big-endian) and 0 once the input runs out, so
  // every input is some case and a short one a simple case: first of each
  // list, smallest of each range, options left out.
  uint64_t next(uint64_t max) {
    if (!from_bytes_) return engine_();
    uint64_t v = 0;
    for (uint64_t m = max; m != 0 && pos_ < size_; m >>= 8) v = (v << 8) | data_[pos_++];
    return v;
  }
  std::mt19937_64 engine_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0, pos_ = 0;
  bool from_bytes_ = false;
};

// Number of KV heads get_min_heads_per_blk accepts for this KV dtype
// (2 * kv_heads / packing in {1, 2, 4, 8} or a multiple of 8).
std::vector<int64_t> tileable_kv_heads(DType kv) {
  switch (dtype_packing(kv)) {
    case 1:
    case 2: return {1, 2, 4};
    case 4: return {2, 4};
    default: return {4};
  }
}

// A value that must never reach a valid output: NaN where the dtype has it,
// else its largest magnitude.
float poison(DType d) {
  return dtype_info(d).kind == DTypeKind::kFloat ? std::numeric_limits<float>::quiet_NaN()
                                                 : static_cast<float>(max_finite(d));
}

Case generate(Rng& rng, const std::string& id, const GenOptions& o) {
  Case c;
  c.id = id;
  c.entry = Entry::kReference;
  c.where = c.id;
  CallArgs& a = c.call;

  const std::vector<DType> q_dtypes{DType::kFloat32, DType::kBFloat16, DType::kFloat16};
  const auto kv_all = computable_dtypes();
  const std::vector<DType> kv_dtypes(kv_all.begin(), kv_all.end());
  const DType q_dtype = o.random_dtypes ? rng.pick(q_dtypes) : DType::kFloat32;
  const DType kv_dtype = o.random_dtypes ? rng.pick(kv_dtypes) : DType::kFloat32;

  const int64_t kv_heads = o.tileable_heads ? rng.pick(tileable_kv_heads(kv_dtype)) : rng.between(1, 3);
  const int64_t ratio = rng.pick(std::vector<int64_t>{1, 2, 4});
  const int64_t q_heads = kv_heads * ratio;
  const int64_t head_dim = o.head_dims.empty() ? rng.between(1, std::max(1, o.max_head_dim)) : rng.pick(o.head_dims);
  const int64_t page_size = rng.pick(std::vector<int64_t>{1, 2, 4, 8, 16});

  const int64_t num_seqs = rng.between(1, std::max(1, o.max_seqs));
  const int64_t max_num_seqs = num_seqs + rng.below(2);
  std::vector<int64_t> q_lens(size_t(max_num_seqs), 0), kv_lens(size_t(max_num_seqs), 0);
  for (int64_t s = 0; s < num_seqs; ++s) {
    const bool decode = rng.chance(40);
    q_lens[s] = decode ? 1 : rng.between(0, o.max_q_len);
    kv_lens[s] = rng.between(std::max<int64_t>(1, q_lens[s]), std::max<int64_t>(q_lens[s] + 1, o.max_kv_len));
  }
  int64_t pages_needed_max = 0, pages_total_needed = 0;
  for (int64_t s = 0; s < num_seqs; ++s) {
    const int64_t need = (kv_lens[s] + page_size - 1) / page_size;
    pages_needed_max = std::max(pages_needed_max, need);
    pages_total_needed += need;
  }
  const int64_t pages_per_seq = pages_needed_max + rng.below(3);
  const int64_t unused_pages = rng.between(1, 3);
  const int64_t total_pages = pages_total_needed + unused_pages;

  // Physical pages in a random order, so that page_indices is a real
  // indirection rather than the identity.
  std::vector<int64_t> perm(static_cast<size_t>(total_pages));
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = total_pages - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(i + 1)]);
  std::vector<int64_t> page_indices(size_t(max_num_seqs * pages_per_seq), 0);
  std::vector<bool> page_used(size_t(total_pages), false);
  int64_t next = 0;
  for (int64_t s = 0; s < max_num_seqs; ++s) {
    const int64_t need = s < num_seqs ? (kv_lens[s] + page_size - 1) / page_size : 0;
    for (int64_t p = 0; p < pages_per_seq; ++p) {
      int64_t page;
      if (p < need) {
        page = perm[next++];
        page_used[page] = true;
      } else {
        page = perm[rng.below(total_pages)];  // padding entries point anywhere valid
      }
      page_indices[s * pages_per_seq + p] = page;
    }
  }

  std::vector<int64_t> cu(size_t(max_num_seqs + 1), 0);
  for (int64_t s = 0; s < max_num_seqs; ++s) cu[s + 1] = cu[s] + q_lens[s];
  const int64_t total_q = cu[num_seqs];
  const int64_t num_tokens = std::max<int64_t>(1, total_q + rng.below(3));

  a.q.shape = {num_tokens, q_heads, head_dim};
  a.q.dtype = q_dtype;
  a.kv_pages.shape = {total_pages, page_size, 2 * kv_heads, head_dim};
  a.kv_pages.dtype = kv_dtype;
  a.kv_lens = int32_tensor({max_num_seqs}, kv_lens);
  a.page_indices = int32_tensor({max_num_seqs, pages_per_seq}, page_indices);
  a.cu_q_lens = int32_tensor({max_num_seqs + 1}, cu);
  a.num_seqs = int32_tensor({1}, {num_seqs});

  c.q_content.source = ContentSource::kData;
  c.q_content.values = seeded_values(q_dtype, rng.raw(), num_elements(a.q.shape));
  c.kv_content.source = ContentSource::kData;
  c.kv_content.values = seeded_values(kv_dtype, rng.raw(), num_elements(a.kv_pages.shape));
  if (o.poison_padding) {
    // Query rows past cu_q_lens[num_seqs] are never read.
    for (int64_t t = total_q; t < num_tokens; ++t)
      for (int64_t i = 0; i < q_heads * head_dim; ++i) c.q_content.values[t * q_heads * head_dim + i] = poison(q_dtype);
    // Unused pages, and slots of used pages past each sequence's kv_len.
    const int64_t page_elems = page_size * 2 * kv_heads * head_dim;
    std::vector<int64_t> valid_slots(size_t(total_pages), 0);
    for (int64_t s = 0; s < num_seqs; ++s)
      for (int64_t p = 0; p * page_size < kv_lens[s]; ++p)
        valid_slots[page_indices[s * pages_per_seq + p]] = std::min(page_size, kv_lens[s] - p * page_size);
    for (int64_t pg = 0; pg < total_pages; ++pg)
      for (int64_t slot = valid_slots[pg]; slot < page_size; ++slot)
        for (int64_t i = 0; i < 2 * kv_heads * head_dim; ++i)
          c.kv_content.values[pg * page_elems + slot * 2 * kv_heads * head_dim + i] = poison(kv_dtype);
  }

  if (o.random_options) {
    const double sm = rng.pick(std::vector<double>{1.0, 0.125, 1.0 / std::sqrt(double(head_dim))});
    a.sm_scale = PyValue::floating(sm);
    if (rng.chance(30)) a.sliding_window = PyValue::integer(rng.between(1, 8));
    if (rng.chance(30)) a.soft_cap = PyValue::floating(rng.pick(std::vector<double>{50.0, 5.0, 1.5}));
    const bool quantised = dtype_bits(kv_dtype) <= 8;
    if (quantised ? rng.chance(60) : rng.chance(15)) a.k_scale = PyValue::floating(rng.pick(std::vector<double>{0.5, 0.25, 2.0}));
    if (quantised ? rng.chance(60) : rng.chance(15)) a.v_scale = PyValue::floating(rng.pick(std::vector<double>{0.5, 0.125, 1.5}));
    // Now and then a scale at float32's edges: dequantised K or V near 3.4e38
    // (scores and p.v sums past float32's range, values cast to Inf), in the
    // subnormals, zero or negative (docs/tolerance.md, "Reference overflow").
    if (rng.chance(4)) {
      const double edge = rng.pick(std::vector<double>{1e38, 3e38, 0x1p120, 0x1p-140, 1e-30, 0.0, -2.0});
      (rng.chance(50) ? a.k_scale : a.v_scale) = PyValue::floating(edge);
    }
    // A mask_value small enough that masked keys keep weight (the tiled
    // emulation's known divergence over padding slots), zero, or float32's
    // lowest; sm_scale and soft_cap at their edges now and then.
    if (rng.chance(10))
      a.mask_value = PyValue::floating(rng.pick(std::vector<double>{-1.0, -20.0, -1e9, 0.0, -3.4e38, 1e30, 3e38}));
    if (rng.chance(3)) a.sm_scale = PyValue::floating(rng.pick(std::vector<double>{1e-40, 0.0, -1.0, 1e30, 1e37}));
    if (rng.chance(3)) a.soft_cap = PyValue::floating(rng.pick(std::vector<double>{1e-30, 1e30, 1e-3}));
  }
  return c;
}

}  // namespace

GenOptions gen_shapes(std::string_view name) {
  GenOptions o;
  if (name == "small") return o;
  if (name == "large") {
    o.name = "large";
    o.max_seqs = 4;
    o.max_q_len = 24;
    o.max_kv_len = 200;
    // Multiples of 64 (the AVX-512 decode item), of 16 (the AVX2 one, the
    // tiles' full vectors), and 136 (a tail of 8 past the vectors).
    o.head_dims = {64, 128, 256, 32, 48, 80, 96, 136};
    return o;
  }
  throw std::invalid_argument(fmt::format("unknown shapes '{}' ({})", name, fmt::join(gen_shape_names(), ", ")));
}

const std::vector<std::string>& gen_shape_names() {
  static const std::vector<std::string> names = {"small", "large"};
  return names;
}

Case random_case(uint64_t seed, const GenOptions& o) {
  Rng rng(seed);
  return generate(rng, o.name == "small" ? fmt::format("gen-{}", seed) : fmt::format("gen-{}-{}", o.name, seed), o);
}

Case random_case_from_bytes(const uint8_t* data, size_t size, const GenOptions& o) {
  // The id names the input (FNV-1a of its bytes), so a reproducer's file
  // name says which fuzzer input it came from.
  uint64_t h = 0xcbf29ce484222325u;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 0x100000001b3u;
  Rng rng(data, size);
  return generate(rng, fmt::format("fuzz-{:016x}", h), o);
}

}  // namespace rpa
