// Tests of the tiled emulation's K/V path: packed-word round trip through strided_load_kv for every KV dtype, and the KV codec.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/tiled/tiled_codec.h"
#include "kernels/tiled/tiled_unpack.h"
#include "oracle/dtype.h"

namespace rpa::tiled {
namespace {

const DType kKvDtypes[] = {DType::kFloat32,      DType::kBFloat16,   DType::kFloat16, DType::kFloat8E4M3FN,
                           DType::kFloat8E5M2, DType::kInt8, DType::kInt4};

bool same_value(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

// Values of the dtype including its edge cases: signed zeros, the smallest
// subnormal, the largest finite, infinities and NaN where it has them.
std::vector<float> sample_values(DType d, size_t n, std::mt19937_64& rng) {
  std::vector<float> v;
  const bool is_float = dtype_info(d).kind == DTypeKind::kFloat;
  if (is_float) {
    v = {0.0f, -0.0f, float(max_finite(d)), -float(max_finite(d)), std::numeric_limits<float>::quiet_NaN()};
    if (d != DType::kFloat32) v.push_back(decode(d, 1u));  // smallest subnormal
    if (d != DType::kFloat8E4M3FN) v.push_back(std::numeric_limits<float>::infinity());
  } else {
    v = {float(max_finite(d)), -float(max_finite(d)) - 1.0f, 0.0f, -1.0f};
  }
  std::uniform_int_distribution<uint32_t> bits(0, d == DType::kFloat32 ? 0xFFFFFFFFu : (1u << dtype_bits(d)) - 1u);
  while (v.size() < n) v.push_back(decode(d, bits(rng)));
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

// The round trip a KV block makes on the TPU: values of [tokens, Hc_blk, D]
// encoded, the array reshaped to [tokens * Hc_blk, D] and bitcast to uint32,
// which packs `packing` consecutive rows into one word (element j of a word
// from row packing * w + j, in its bits [j * bits, (j + 1) * bits)); then
// the kernel's chunked strided loads (kernel.py:620-628) must give back K of
// combined head 2 * kv_head and V of 2 * kv_head + 1.
TEST(TiledUnpack, PackedWordsRoundTripForEveryKvDtype) {
  std::mt19937_64 rng(7);
  for (DType d : kKvDtypes) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    const int packing = 32 / dtype_bits(d);
    Geometry g;
    g.kv_dtype = d;
    g.kv_packing = packing;
    g.head_dim = 3;
    g.num_kv_per_blk = 5;
    g.num_combined_kv_heads_per_blk = 2 * std::max(2, packing);  // several chunks
    g.num_kv_heads_per_blk = g.num_combined_kv_heads_per_blk / 2;
    const int64_t hc = g.num_combined_kv_heads_per_blk, dim = g.head_dim, tokens = g.num_kv_per_blk;
    const std::vector<float> x = sample_values(d, size_t(tokens * hc * dim), rng);
    std::vector<uint32_t> words(size_t(tokens * hc / packing * dim));
    for (int64_t w = 0; w < tokens * hc / packing; ++w)
      for (int64_t c = 0; c < dim; ++c) {
        std::vector<uint32_t> elems;
        for (int j = 0; j < packing; ++j) elems.push_back(encode(d, x[size_t((w * packing + j) * dim + c)]));
        words[size_t(w * dim + c)] = pack_word(d, elems);
      }
    const KvCodec codec(d);
    const int64_t step = kv_load_step(g);
    EXPECT_EQ(step, std::max(1, packing / 2));
    std::vector<std::vector<float>> k(size_t(step), std::vector<float>(size_t(tokens * dim))), v = k;
    std::vector<float*> kp, vp;
    for (int64_t j = 0; j < step; ++j) kp.push_back(k[size_t(j)].data()), vp.push_back(v[size_t(j)].data());
    for (int64_t chunk = 0; chunk < g.num_kv_heads_per_blk; chunk += step) {
      strided_load_kv(words.data(), g, codec, chunk * 2, hc, kp.data(), vp.data());
      for (int64_t j = 0; j < step; ++j)
        for (int64_t t = 0; t < tokens; ++t)
          for (int64_t c = 0; c < dim; ++c) {
            const int64_t kh = 2 * (chunk + j);
            const float want_k = x[size_t((t * hc + kh) * dim + c)], want_v = x[size_t((t * hc + kh + 1) * dim + c)];
            ASSERT_TRUE(same_value(k[size_t(j)][size_t(t * dim + c)], want_k))
                << "K head " << kh << " token " << t << " lane " << c << ": " << k[size_t(j)][size_t(t * dim + c)]
                << " vs " << want_k;
            ASSERT_TRUE(same_value(v[size_t(j)][size_t(t * dim + c)], want_v))
                << "V head " << kh + 1 << " token " << t << " lane " << c;
          }
    }
  }
}

// The bfloat16 path is the shift-and-mask one (kernel.py:375-381): a word
// with K bits 0x3F80 (1.0) low and V bits 0xC000 (-2.0) high.
TEST(TiledUnpack, BFloat16ShiftAndMask) {
  Geometry g;
  g.kv_dtype = DType::kBFloat16;
  g.kv_packing = 2;
  g.head_dim = 1;
  g.num_kv_per_blk = 1;
  const uint32_t word = 0xC0003F80u;
  float k = 0, v = 0;
  float* kp = &k;
  float* vp = &v;
  strided_load_kv(&word, g, KvCodec(DType::kBFloat16), 0, 2, &kp, &vp);
  EXPECT_EQ(k, 1.0f);
  EXPECT_EQ(v, -2.0f);
}

// KvCodec is a cache of rpa::encode / rpa::decode: it must agree with them on
// every bit pattern and on values that need rounding.
TEST(TiledCodec, AgreesWithTheDtypeModel) {
  std::mt19937_64 rng(11);
  for (DType d : kKvDtypes) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    const KvCodec c(d);
    if (d != DType::kFloat32)
      for (uint32_t b = 0; b < (1u << dtype_bits(d)); ++b) {
        ASSERT_TRUE(same_value(c.decode(b), decode(d, b))) << b;
        const float x = decode(d, b);
        ASSERT_EQ(c.encode(x), encode(d, x)) << "bits " << b << " value " << x;
      }
    for (int i = -300; i <= 300; ++i) ASSERT_EQ(c.encode(float(i)), encode(d, float(i))) << i;  // saturation
    std::uniform_real_distribution<float> u(-600.0f, 600.0f);
    for (int i = 0; i < 20000; ++i) {
      const float x = i % 2 ? u(rng) : std::ldexp(u(rng), -int(i % 40));
      ASSERT_EQ(c.encode(x), encode(d, x)) << x;
    }
  }
}

}  // namespace
}  // namespace rpa::tiled
