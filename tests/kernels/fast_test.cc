// Tests of the fast kernel: its SIMD dtype conversions against the dtype model, and its attention against an
// independent float64 attention written here, on random small cases for every q / KV dtype pair.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "hwy/targets.h"
#include "kernels/abi_dtype.h"
#include "kernels/fast/fast_attention.h"
#include "kernels/fast/native_kv.h"
#include "kernels/fast/simd_attention.h"
#include "oracle/dtype.h"

namespace rpa::fast {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kCanary = -12345.0f;  // what run_fast puts in the output buffer
const float kDefaultMask = static_cast<float>(-0.7 * double(std::numeric_limits<float>::max()));

bool same_value(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// ------------------------------------------------------------ conversions

std::vector<uint8_t> native_bytes(DType d, const std::vector<uint32_t>& bits) {
  const int eb = native_elem_bytes(d);
  std::vector<uint8_t> out(bits.size() * eb);
  for (size_t i = 0; i < bits.size(); ++i) {
    uint32_t b = bits[i];
    if (d == DType::kInt4) b = (b & 0x8) ? (b | 0xF0) : b;
    std::memcpy(out.data() + i * eb, &b, eb);  // little-endian low bytes
  }
  return out;
}

std::vector<uint32_t> all_patterns(DType d) {
  std::vector<uint32_t> v(size_t(1) << dtype_bits(d));
  std::iota(v.begin(), v.end(), 0u);
  return v;
}

TEST(FastConvert, EveryPatternOfEverySmallDtypeDecodesAsTheDtypeModel) {
  for (DType d : {DType::kBFloat16, DType::kFloat16, DType::kFloat8E4M3FN, DType::kFloat8E5M2, DType::kInt8,
                  DType::kInt4}) {
    const auto bits = all_patterns(d);
    const auto bytes = native_bytes(d, bits);
    // Odd lengths exercise the tail path.
    for (int64_t n : {int64_t(bits.size()), int64_t(bits.size()) - 3}) {
      std::vector<float> got(n);
      convert_row_for_test(d, DType::kFloat32, false, 1.0f, bytes.data(), n, got.data());
      for (int64_t i = 0; i < n; ++i)
        ASSERT_TRUE(same_value(got[i], decode(d, bits[i])))
            << dtype_name(d) << " pattern " << bits[i] << ": " << got[i] << " vs " << decode(d, bits[i]);
    }
  }
}

// The decode item reads 8-bit float KV as bfloat16 words looked up byte by
// byte, interleaved in VPUNPCK{L,H}BW's order: word 8j + i of the first
// vector is element 16j + i, of the second element 16j + 8 + i, per 128-bit
// block j. Every pattern (four lines of 64) against the dtype model.
// Unscaled, each byte's own value (every one is a bfloat16 value); scaled
// (bfloat16 q), x.astype(f32) * scale then .astype(bf16) as the reference
// dequantises (kernel.py:124-129): negative scales, results that are
// bfloat16 subnormals or that overflow to Inf, 0 x Inf and NaN included.
TEST(FastConvert, EveryPatternOfEightBitFloatKvReadsAsTheDecodeItemsBfloat16Words) {
  const float kScales[] = {0.5f, -0.25f, 3.0f, 1.1f, 1e-39f, 8e35f, 0.0f, -0.0f, kNaN,
                           std::numeric_limits<float>::infinity()};
  for (DType d : {DType::kFloat8E4M3FN, DType::kFloat8E5M2})
    for (int si = -1; si < int(std::size(kScales)); ++si) {
      const bool scaled = si >= 0;
      const float scale = scaled ? kScales[si] : 1.0f;
      for (uint32_t line = 0; line < 4; ++line) {
        uint8_t bytes[64];
        for (uint32_t e = 0; e < 64; ++e) bytes[e] = uint8_t(line * 64 + (e * 37 + 11) % 64);  // shuffled in the line
        uint16_t words[64];
        if (!fp8_words_for_test(d, scaled, scale, bytes, words))
          GTEST_SKIP() << "no AVX512-BF16 and AVX512-VBMI decode item here";
        for (uint32_t v = 0; v < 2; ++v)
          for (uint32_t j = 0; j < 4; ++j)
            for (uint32_t i = 0; i < 8; ++i) {
              const uint32_t elem = 16 * j + 8 * v + i, bits = bytes[elem];
              const float got = decode(DType::kBFloat16, words[32 * v + 8 * j + i]);
              const float want = scaled ? round_to(DType::kBFloat16, decode(d, bits) * scale) : decode(d, bits);
              ASSERT_TRUE(same_value(got, want) && (std::isnan(want) || std::signbit(got) == std::signbit(want)))
                  << dtype_name(d) << " pattern " << bits << " scale " << scale << ": " << got << " vs " << want;
            }
      }
    }
}

// Highway limited to its AVX2 target for a test's lifetime, so that the
// AVX2 decode item (avx2_group-inl.h) runs on AVX-512 machines too. Holds
// false where the CPU has no AVX2 (or where not asked to limit).
struct OnlyAvx2 {
  const bool ok;
  explicit OnlyAvx2(bool limit = true) : ok(limit && (hwy::SupportedTargets() & HWY_AVX2) != 0) {
    if (ok) hwy::SetSupportedTargetsForTest(HWY_AVX2);
  }
  ~OnlyAvx2() {
    if (ok) hwy::SetSupportedTargetsForTest(0);
  }
};

// Runs `body` on the dispatched target, then with Highway limited to AVX2
// where the CPU has it (its own decode item and tile widths); stops after
// a fatal failure.
template <class Body>
void OnDispatchedThenAvx2(Body body) {
  for (const bool avx2 : {false, true}) {
    const OnlyAvx2 only(avx2);
    if (avx2 && !only.ok) continue;
    body(avx2);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// The AVX2 decode item widens 8-bit float KV through float16 (F16C),
// float8_e4m3fn's values divided by 2^8 with q and the probabilities
// multiplied by 2^8 instead. Every pattern against the dtype model: the
// exact value with its sign (zeros, subnormals, the largest normals), and
// NaN (float8_e4m3fn's 0x7F and 0xFF, float8_e5m2's) and float8_e5m2's
// Inf. The read for KV known finite (finite_kv) does not see
// float8_e4m3fn's NaN: shown too, so that the item's choice between the
// two reads (SeqPlan::k_finite) cannot go stale unseen.
TEST(FastConvert, EveryPatternOfEightBitFloatKvIsExactInTheAvx2DecodeItem) {
  const OnlyAvx2 only;
  if (!only.ok) GTEST_SKIP() << "the CPU has no AVX2";
  for (DType d : {DType::kFloat8E4M3FN, DType::kFloat8E5M2})
    for (bool finite_kv : {false, true})
      for (uint32_t b0 = 0; b0 < 256; b0 += 16) {
        uint8_t bytes[16];
        for (uint32_t i = 0; i < 16; ++i) bytes[i] = uint8_t(b0 + (i * 7 + 3) % 16);  // shuffled in the chunk
        float got[16];
        ASSERT_TRUE(avx2_kv_row_for_test(d, DType::kFloat32, false, 1.0f, finite_kv, bytes, got));
        for (uint32_t i = 0; i < 16; ++i) {
          const float want = decode(d, bytes[i]);
          if (finite_kv && d == DType::kFloat8E4M3FN && std::isnan(want)) {
            EXPECT_FALSE(std::isnan(got[i])) << "e4m3fn NaN pattern " << int(bytes[i]) << " now reads as NaN";
            continue;
          }
          ASSERT_TRUE(same_value(got[i], want) && (std::isnan(want) || std::signbit(got[i]) == std::signbit(want)))
              << dtype_name(d) << " pattern " << int(bytes[i]) << (finite_kv ? " (finite read)" : "") << ": "
              << got[i] << " vs " << want;
        }
      }
}

// What the AVX2 decode item computes with under k_scale / v_scale, against
// the dtype model: round_to(q, decode(x) * scale), the reference's
// dequantisation (kernel.py:124-129), for every pattern of bfloat16 and the
// 8-bit floats and float32 specials plus random patterns; float32 and
// bfloat16 q; scales of both signs, subnormal, zero, large, Inf and NaN.
// Where the hook declines, it must be for the one reason the item has: a
// finite scale whose float8_e4m3fn multiplier (scale x 2^8) overflows.
TEST(FastConvert, TheAvx2DecodeItemDequantisesAsTheReference) {
  const OnlyAvx2 only;
  if (!only.ok) GTEST_SKIP() << "the CPU has no AVX2";
  const float kInf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(99);
  for (DType d : {DType::kFloat32, DType::kBFloat16, DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
    std::vector<uint32_t> bits;
    if (d == DType::kFloat32) {
      for (uint32_t b : {0u, 0x80000000u, 1u, 0x007FFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u, 0xFF800000u,
                         0x7FC00000u, 0x7F800001u, 0x3F808000u, 0x3F818000u, 0x3F80C000u, 0x3F807FFFu, 0x7F7F8000u})
        bits.push_back(b);
      while (bits.size() % 16 != 0 || bits.size() < 4096) bits.push_back(uint32_t(rng()));
    } else {
      bits = all_patterns(d);
    }
    const auto bytes = native_bytes(d, bits);
    const size_t eb = size_t(native_elem_bytes(d));
    for (DType q : {DType::kFloat32, DType::kBFloat16})
      for (float scale : {0.37f, -1.7f, 3.1e-3f, 1e-39f, 2e36f, 1e30f, 0.0f, -0.0f, kInf, kNaN}) {
        for (size_t i0 = 0; i0 < bits.size(); i0 += 16) {
          float got[16];
          if (!avx2_kv_row_for_test(d, q, true, scale, /*finite_kv=*/false, bytes.data() + i0 * eb, got)) {
            ASSERT_TRUE(d == DType::kFloat8E4M3FN && std::isfinite(scale) &&
                        std::fabs(scale) > std::numeric_limits<float>::max() / 256)
                << dtype_name(d) << "->" << dtype_name(q) << " x" << scale << ": declined";
            break;
          }
          for (size_t i = 0; i < 16; ++i) {
            const float x = decode(d, bits[i0 + i]);
            const float want = round_to(q, x * scale);
            ASSERT_TRUE(same_value(got[i], want)) << dtype_name(d) << "->" << dtype_name(q) << " x" << scale
                                                  << " pattern " << bits[i0 + i] << ": " << got[i] << " vs " << want;
          }
        }
      }
  }
}

// |got - want| in units of want's float32 ulp (subnormal spacing below
// the normals), want from long double exp: independent of the kernel's
// polynomial and of hwy's.
double ExpUlps(float got, long double want) {
  if (std::isinf(static_cast<float>(want))) return std::isinf(got) && got > 0 ? 0.0 : 1e30;
  int e = 0;
  std::frexp(static_cast<double>(want), &e);
  const long double ulp = std::ldexp(1.0L, std::max(e - 24, -149));
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) / ulp);
}

TEST(FastConvert, TheSoftmaxWeightExponentialStaysWithinAnUlpAndAQuarterOfExp) {
  // Every 61st float from -0 down to -87.5 (both sides of the fast range's
  // edge at -87, subnormal and tiny x included), and positives to 88.5.
  std::vector<float> x;
  for (uint32_t b = 0x80000000u; b <= 0xC2AF0000u; b += 61) {
    float v;
    std::memcpy(&v, &b, 4);
    x.push_back(v);
  }
  for (float v = 0.0f; v <= 88.5f; v += 0.0173f) x.push_back(v);
  std::vector<float> got(x.size());
  weight_exp_for_test(x.data(), int64_t(x.size()), got.data());
  double worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double u = ExpUlps(got[i], std::exp(static_cast<long double>(x[i])));
    if (u > worst) worst = u, worst_x = x[i];
  }
  EXPECT_LE(worst, 1.26) << "at x = " << worst_x;
  // Lanes outside the fast range send their vector the exact way: NaN kept,
  // -inf to 0, overflow to inf, subnormal results, beside in-range lanes.
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> edge = {-1.0f, -100.0f, nan, -inf, 0.0f, 89.0f, inf, -87.5f,
                                   -0.5f, -3.0f, -20.0f, -86.9f, 87.9f, -1e-30f, -60.0f, 1.0f};
  std::vector<float> out(edge.size());
  weight_exp_for_test(edge.data(), int64_t(edge.size()), out.data());
  for (size_t i = 0; i < edge.size(); ++i) {
    if (std::isnan(edge[i])) {
      EXPECT_TRUE(std::isnan(out[i]));
      continue;
    }
    EXPECT_LE(ExpUlps(out[i], std::exp(static_cast<long double>(edge[i]))), 1.26) << "x = " << edge[i];
  }
}

TEST(FastConvert, Float32RowsAreCopied) {
  std::vector<float> v = {1.5f, -0.0f, kNaN, std::numeric_limits<float>::infinity(), 1e-45f, 3.0f, -7.25f};
  std::vector<float> got(v.size());
  convert_row_for_test(DType::kFloat32, DType::kFloat32, false, 1.0f, reinterpret_cast<const uint8_t*>(v.data()),
                       int64_t(v.size()), got.data());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_TRUE(same_value(got[i], v[i])) << i;
}

// k.astype(f32) * k_scale, then .astype(q.dtype) (kernel.py:118-123).
TEST(FastConvert, DequantisationRoundsToTheQDtypeAsTheReference) {
  for (DType q : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    for (DType d : {DType::kFloat8E4M3FN, DType::kFloat8E5M2, DType::kInt8, DType::kInt4, DType::kBFloat16,
                    DType::kFloat16}) {
      for (float scale : {0.5f, 1.7f, 3.1e-3f, 1e30f}) {
        const auto bits = all_patterns(d);
        const auto bytes = native_bytes(d, bits);
        std::vector<float> got(bits.size());
        convert_row_for_test(d, q, true, scale, bytes.data(), int64_t(bits.size()), got.data());
        for (size_t i = 0; i < bits.size(); ++i) {
          const float want = round_to(q, decode(d, bits[i]) * scale);
          ASSERT_TRUE(same_value(got[i], want)) << dtype_name(d) << "->" << dtype_name(q) << " x" << scale
                                                << " pattern " << bits[i] << ": " << got[i] << " vs " << want;
        }
      }
    }
  }
}

TEST(FastConvert, OutputCastMatchesTheDtypeModel) {
  std::mt19937 rng(7);
  std::vector<float> x;
  for (int i = 0; i < 200000; ++i) {
    uint32_t b = rng();
    float f;
    std::memcpy(&f, &b, 4);
    x.push_back(f);
  }
  // Ties, neighbours of ties, overflow edges, subnormals of each format.
  for (uint32_t base : {0x3F808000u, 0x3F818000u, 0x7F7F8000u, 0x7F7FFFFFu, 0x477FE000u, 0x477FF000u, 0x33800000u,
                        0x33000000u, 0x00008000u, 0x80018000u}) {
    for (int k = -2; k <= 2; ++k) {
      float f;
      const uint32_t b = base + uint32_t(k);
      std::memcpy(&f, &b, 4);
      x.push_back(f);
      x.push_back(-f);
    }
  }
  for (DType q : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    std::vector<float> got(x.size());
    round_values(q, x.data(), int64_t(x.size()), got.data());
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_TRUE(same_value(got[i], round_to(q, x[i]))) << dtype_name(q) << " of " << x[i];
  }
}

// ------------------------------------------------------- a random problem

struct TestCase {
  DType q_dtype = DType::kFloat32, kv_dtype = DType::kFloat32;
  int64_t T = 0, Hq = 1, D = 1, P = 0, ps = 1, Hc = 2, S = 0, pps = 0;
  std::vector<float> q, kv;
  std::vector<int32_t> kv_lens, page_indices, cu_q_lens;
  int32_t num_seqs = 0;
  float sm_scale = 1.0f;
  bool has_window = false;
  int64_t window = 0;
  bool has_cap = false;
  float cap = 0.0f;
  float mask_value = kDefaultMask;
  bool has_k_scale = false, has_v_scale = false;
  float k_scale = 1.0f, v_scale = 1.0f;
  int threads = 0;

  rpa_problem problem() const {
    rpa_problem p{};
    p.abi_version = RPA_ABI_VERSION;
    p.q_dtype = abi_dtype_of(q_dtype);
    p.kv_dtype = abi_dtype_of(kv_dtype);
    p.num_tokens = T;
    p.num_q_heads = Hq;
    p.head_dim = D;
    p.total_num_pages = P;
    p.page_size = ps;
    p.num_combined_kv_heads = Hc;
    p.max_num_seqs = S;
    p.pages_per_seq = pps;
    p.q = q.data();
    p.kv_pages = kv.data();
    p.kv_lens = kv_lens.data();
    p.page_indices = page_indices.data();
    p.cu_q_lens = cu_q_lens.data();
    p.num_seqs = num_seqs;
    p.sm_scale = sm_scale;
    p.has_sliding_window = has_window;
    p.sliding_window = window;
    p.has_soft_cap = has_cap;
    p.soft_cap = cap;
    p.mask_value = mask_value;
    p.has_k_scale = has_k_scale;
    p.k_scale = k_scale;
    p.has_v_scale = has_v_scale;
    p.v_scale = v_scale;
    p.num_threads = threads;
    return p;
  }
  float& kv_at(int64_t page, int64_t slot, int64_t head, int64_t d) {
    return kv[((page * ps + slot) * Hc + head) * D + d];
  }
};

// k_scale / v_scale of a case, each on or off.
struct KvScales {
  bool k, v;
  float ks, vs;
  void apply_to(TestCase& c) const {
    c.has_k_scale = k, c.k_scale = ks;
    c.has_v_scale = v, c.v_scale = vs;
  }
};

float random_value(DType d, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  switch (d) {
    case DType::kInt8: return float(int(rng() % 7) - 3);  // small, as normal samples cast to int are
    case DType::kInt4: return float(int(rng() % 7) - 3);
    default: return round_to(d, u(rng));
  }
}

// Valid sequences (monotone cu_q_lens, kv_len within the page table),
// shuffled pages, NaN in every slot nothing attends.
TestCase random_case(std::mt19937& rng, DType q_dtype, DType kv_dtype) {
  auto pick = [&](std::initializer_list<int64_t> v) { return *(v.begin() + rng() % v.size()); };
  TestCase c;
  c.q_dtype = q_dtype;
  c.kv_dtype = kv_dtype;
  const int64_t Hkv = pick({1, 2});
  c.Hq = Hkv * pick({1, 2, 4, 8});
  c.Hc = 2 * Hkv;
  c.D = pick({1, 3, 8, 16, 20, 64});
  c.ps = pick({1, 2, 5, 16});
  c.S = pick({1, 2, 3, 5});
  const int64_t n = std::min<int64_t>(c.S, pick({0, 1, 2, 3, 5}));
  std::vector<int64_t> qlen(c.S, 0), kvlen(c.S, 0);
  int64_t max_kv = 1;
  for (int64_t i = 0; i < n; ++i) {
    qlen[i] = pick({0, 1, 1, 2, 5, 9, 17, 40});
    const int64_t extra = pick({0, 0, 1, 3, 12, 37});
    kvlen[i] = rng() % 8 == 0 ? std::max<int64_t>(0, qlen[i] - 3) : qlen[i] + extra;  // sometimes q_len > kv_len
    max_kv = std::max(max_kv, kvlen[i]);
  }
  c.pps = (max_kv + c.ps - 1) / c.ps + int64_t(rng() % 2);
  int64_t needed = 0;
  for (int64_t i = 0; i < n; ++i) needed += (kvlen[i] + c.ps - 1) / c.ps;
  c.P = needed + 1 + int64_t(rng() % 3);
  std::vector<int32_t> perm(c.P);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  c.kv.assign(size_t(c.P * c.ps * c.Hc * c.D), kNaN);
  c.page_indices.assign(size_t(c.S * c.pps), 0);
  int64_t next_page = 0;
  for (int64_t i = 0; i < c.S; ++i) {
    const int64_t used = i < n ? (kvlen[i] + c.ps - 1) / c.ps : 0;
    for (int64_t k = 0; k < c.pps; ++k) {
      if (k < used) {
        c.page_indices[i * c.pps + k] = perm[next_page++];
      } else {  // padding entries as the upstream test writes them: NaN cast to int32, or junk
        c.page_indices[i * c.pps + k] = rng() % 2 ? std::numeric_limits<int32_t>::min() : int32_t(rng() % 1000);
      }
    }
    for (int64_t j = 0; j < (i < n ? kvlen[i] : 0); ++j)
      for (int64_t h = 0; h < c.Hc; ++h)
        for (int64_t d = 0; d < c.D; ++d)
          c.kv_at(c.page_indices[i * c.pps + j / c.ps], j % c.ps, h, d) = random_value(kv_dtype, rng);
  }
  c.cu_q_lens.assign(size_t(c.S + 1), 0);
  for (int64_t i = 0; i < c.S; ++i) c.cu_q_lens[i + 1] = int32_t(c.cu_q_lens[i] + qlen[i]);
  for (int64_t i = n; i < c.S; ++i) c.cu_q_lens[i + 1] = c.cu_q_lens[n];
  c.T = c.cu_q_lens[c.S] + int64_t(rng() % 3);
  c.q.assign(size_t(c.T * c.Hq * c.D), kNaN);  // rows past cu_q_lens[num_seqs] stay NaN
  for (int64_t i = 0; i < c.cu_q_lens[n] * c.Hq * c.D; ++i) c.q[i] = random_value(q_dtype, rng);
  c.kv_lens.assign(size_t(c.S), 0);
  for (int64_t i = 0; i < c.S; ++i) c.kv_lens[i] = int32_t(i < n ? kvlen[i] : int64_t(rng() % 50));
  c.num_seqs = int32_t(n);

  c.sm_scale = float(pick({0, 1, 2})) == 0 ? 1.0f : (rng() % 2 ? 0.5f : float(1.0 / std::sqrt(double(c.D))));
  if (rng() % 3 == 0) c.has_window = true, c.window = pick({1, 3, 7, 30});
  if (rng() % 3 == 0) c.has_cap = true, c.cap = rng() % 2 ? 5.0f : 50.0f;
  switch (rng() % 6) {
    case 0: c.mask_value = -1.0f; break;  // masked keys still weigh e^-1
    case 1: c.mask_value = -20.0f; break;
    case 2: c.mask_value = -1e9f; break;
    default: break;
  }
  if (rng() % 3 == 0) c.has_k_scale = true, c.k_scale = rng() % 2 ? 0.5f : 1.7f;
  if (rng() % 3 == 0) c.has_v_scale = true, c.v_scale = rng() % 2 ? 0.5f : 1.7f;
  c.threads = int(pick({1, 2, 3}));
  return c;
}

// ----------------------------------------------- the float64 truth, here
// The math of ref_ragged_paged_attention (kernel.py:73-148) with no rounding
// after the dequantised inputs, written for valid inputs: exact softmax of
// s + mask_value * [masked], computed with the mask term kept apart so a
// huge mask_value cancels exactly where every key is masked.

struct Truth {
  std::vector<double> out;    // [rows, Hq, D]
  std::vector<double> bound;  // the acceptance bound per element
  int64_t rows = 0;
};

// round_scores: each score is the float32 rounding of the exact q.k, times
// sm_scale in float32 - the reference's einsum and scaling (kernel.py:131-132)
// - instead of exact: the truth the exact-score recomputation is held to.
Truth truth_of(const TestCase& c, bool round_scores = false) {
  Truth t;
  const int64_t G = c.Hq / (c.Hc / 2);
  t.rows = c.cu_q_lens[c.num_seqs];
  t.out.assign(size_t(t.rows * c.Hq * c.D), 0.0);
  std::vector<double> vmax(t.out.size(), 0.0);
  double u = std::max({unit_roundoff(c.q_dtype), unit_roundoff(c.kv_dtype), std::ldexp(1.0, -24)});
  for (int64_t i = 0; i < c.num_seqs; ++i) {
    const int64_t q0 = c.cu_q_lens[i], ql = c.cu_q_lens[i + 1] - q0, kl = c.kv_lens[i];
    auto kv_value = [&](int64_t j, int64_t head, int64_t d, bool is_v) {
      const int64_t page = c.page_indices[i * c.pps + j / c.ps];
      const float x = c.kv[((page * c.ps + j % c.ps) * c.Hc + head) * c.D + d];
      if (is_v ? c.has_v_scale : c.has_k_scale) return double(round_to(c.q_dtype, x * (is_v ? c.v_scale : c.k_scale)));
      return double(x);
    };
    for (int64_t tq = 0; tq < ql; ++tq) {
      const int64_t q_span = kl - ql + tq;
      for (int64_t h = 0; h < c.Hq; ++h) {
        const int64_t g = h / G;
        std::vector<double> s(kl);
        std::vector<int> masked(kl);
        for (int64_t j = 0; j < kl; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.D; ++d) dot += double(c.q[((q0 + tq) * c.Hq + h) * c.D + d]) * kv_value(j, 2 * g, d, false);
          dot = round_scores ? double(float(dot) * c.sm_scale) : dot * double(c.sm_scale);
          if (c.has_cap) dot = double(c.cap) * std::tanh(dot / double(c.cap));
          s[j] = dot;
          masked[j] = q_span < j || (c.has_window && q_span - c.window >= j);
        }
        // exponent_j = (s_j - s_ref) + M * (masked_j - masked_ref), ref the argmax.
        const double M = c.mask_value;
        // 0 between keys masked alike (an infinite M times 0 would be NaN).
        const auto mask_term = [&](int64_t j, int64_t r) {
          return masked[j] == masked[r] ? 0.0 : M * (masked[j] - masked[r]);
        };
        int64_t ref = -1;
        for (int64_t j = 0; j < kl; ++j) {
          if (ref < 0) { ref = j; continue; }
          const double e = (s[j] - s[ref]) + mask_term(j, ref);
          if (e > 0) ref = j;
        }
        std::vector<double> w(kl);
        double sum = 0;
        for (int64_t j = 0; j < kl; ++j) {
          w[j] = std::exp((s[j] - s[ref]) + mask_term(j, ref));
          sum += w[j];
        }
        for (int64_t d = 0; d < c.D; ++d) {
          double acc = 0, vm = 0;
          for (int64_t j = 0; j < kl; ++j) {
            const double v = kv_value(j, 2 * g + 1, d, true);
            acc += w[j] * v;
            if (w[j] > 1e-30 * sum) vm = std::max(vm, std::fabs(v));  // the keys the row attends
          }
          const size_t o = size_t(((q0 + tq) * c.Hq + h) * c.D + d);
          t.out[o] = kl > 0 ? acc / sum : 0.0;
          vmax[o] = vm;
        }
      }
    }
  }
  double max_abs = 0;
  for (double x : t.out) max_abs = std::max(max_abs, std::fabs(x));
  t.bound.resize(t.out.size());
  for (size_t o = 0; o < t.out.size(); ++o)
    t.bound[o] = 2 * u * (vmax[o] + std::fabs(t.out[o])) + 1e-5 * (1 + max_abs);
  return t;
}

std::vector<float> run_fast(const TestCase& c, const Options& opt = {}, std::vector<std::string>* diag = nullptr) {
  const rpa_problem p = c.problem();
  const NativeKv kv = encode_kv(p);
  std::vector<float> out(size_t(c.T * c.Hq * c.D), kCanary);
  const rpa_status st = attention(p, kv, out.data(), diag, opt);
  EXPECT_EQ(st.code, RPA_OK) << (st.message ? st.message : "");
  return out;
}

std::string describe(const TestCase& c) {
  return std::string(dtype_name(c.q_dtype)) + "/" + std::string(dtype_name(c.kv_dtype)) + " Hq=" +
         std::to_string(c.Hq) + " Hc=" + std::to_string(c.Hc) + " D=" + std::to_string(c.D) +
         " ps=" + std::to_string(c.ps) + " seqs=" + std::to_string(c.num_seqs) + " window=" +
         (c.has_window ? std::to_string(c.window) : "-") + " cap=" + (c.has_cap ? std::to_string(c.cap) : "-") +
         " mask=" + std::to_string(c.mask_value) + " kscale=" + (c.has_k_scale ? std::to_string(c.k_scale) : "-") +
         " vscale=" + (c.has_v_scale ? std::to_string(c.v_scale) : "-") + " threads=" + std::to_string(c.threads);
}

void expect_within_bound(const TestCase& c, const std::vector<float>& got, bool round_scores = false) {
  const Truth t = truth_of(c, round_scores);
  for (size_t o = 0; o < t.out.size(); ++o) {
    ASSERT_FALSE(std::isnan(got[o])) << describe(c) << " element " << o;
    ASSERT_LE(std::fabs(double(got[o]) - t.out[o]), t.bound[o])
        << describe(c) << " element " << o << ": fast " << got[o] << " truth " << t.out[o];
    ASSERT_TRUE(same_value(got[o], round_to(c.q_dtype, got[o]))) << "not a value of q's dtype: " << got[o];
  }
  for (size_t o = t.out.size(); o < got.size(); ++o) ASSERT_EQ(got[o], kCanary) << "row past cu_q_lens[num_seqs] written";
}

// The case again with a sliding window and a soft cap on.
void expect_within_bound_windowed(TestCase& c, int64_t window, float cap, const Options& opt = {}) {
  c.has_window = true;
  c.window = window;
  c.has_cap = true;
  c.cap = cap;
  expect_within_bound(c, run_fast(c, opt));
}

// The case as it is, then with the decode tests' window (40) and soft cap (4).
void expect_within_bound_as_is_and_windowed(TestCase& c, const Options& opt = {}) {
  expect_within_bound(c, run_fast(c, opt));
  expect_within_bound_windowed(c, 40, 4.0f, opt);
}

// What a non-finite input makes of an output element in the reference.
enum class Poisoned { kNo, kNaN, kEither };

// `got` against `clean`, the truth of the case with its non-finite inputs
// taken out: NaN where poisoned(o) says so, within clean's bound where it
// says kNo, unchecked where kEither.
template <class PoisonedAt>
void expect_poisoned_else_within_bound(const Truth& clean, const std::vector<float>& got, PoisonedAt poisoned) {
  for (size_t o = 0; o < clean.out.size(); ++o) {
    switch (poisoned(o)) {
      case Poisoned::kNaN: ASSERT_TRUE(std::isnan(got[o])) << "element " << o << " should be NaN, is " << got[o]; break;
      case Poisoned::kNo:
        ASSERT_LE(std::fabs(double(got[o]) - clean.out[o]), clean.bound[o])
            << "element " << o << ": fast " << got[o] << " truth " << clean.out[o];
        break;
      case Poisoned::kEither: break;
    }
  }
}

// Every way of the bfloat16 paths: by VDPBF16PS where the CPU has it
// (whatever its speed); widened to float32 (what kAuto picks where
// VDPBF16PS is slow), which for bfloat16-KV decode is the decode item's FMA
// path where the CPU has AVX512-BF16 (on the AVX2 target: the AVX2 decode
// item); and that decode left to the generic group item.
struct Bf16Mode {
  const char* name;
  Options::Bf16Dot dot;
  bool decode_item;
};
const Bf16Mode kBf16Modes[] = {{"bf16_dot=on", Options::Bf16Dot::kOn, true},
                               {"bf16_dot=off", Options::Bf16Dot::kOff, true},
                               {"bf16_dot=off, generic group item", Options::Bf16Dot::kOff, false}};
Options with_bf16_mode(const Bf16Mode& mode) {
  Options o;
  o.bf16_dot = mode.dot;
  o.bf16_decode_item = mode.decode_item;
  return o;
}
Options with_bf16_dot(Options::Bf16Dot dot) { return with_bf16_mode({"", dot, true}); }

class FastPairs : public ::testing::TestWithParam<std::tuple<DType, DType>> {};

TEST_P(FastPairs, RandomCasesAreWithinTheBoundOfTheExactMath) {
  const auto [q_dtype, kv_dtype] = GetParam();
  std::mt19937 rng(1000 + 37 * int(q_dtype) + int(kv_dtype));
  for (int iter = 0; iter < 25; ++iter) {
    const TestCase c = random_case(rng, q_dtype, kv_dtype);
    expect_within_bound(c, run_fast(c));
    if (HasFatalFailure()) return;
  }
}

// Skipping blocks masked for a whole tile changes nothing but the order of
// float32 sums.
TEST_P(FastPairs, SkippingMaskedBlocksChangesNothing) {
  const auto [q_dtype, kv_dtype] = GetParam();
  std::mt19937 rng(2000 + 37 * int(q_dtype) + int(kv_dtype));
  for (int iter = 0; iter < 10; ++iter) {
    TestCase c = random_case(rng, q_dtype, kv_dtype);
    c.mask_value = kDefaultMask;
    const auto skip = run_fast(c);
    Options no_skip;
    no_skip.skip_masked_blocks = false;
    const auto full = run_fast(c, no_skip);
    const double u = std::max(unit_roundoff(q_dtype), std::ldexp(1.0, -24));
    for (size_t o = 0; o < skip.size(); ++o)
      ASSERT_LE(std::fabs(double(skip[o]) - full[o]), 2 * u * std::fabs(full[o]) + 1e-6) << describe(c) << " " << o;
  }
}

std::vector<std::tuple<DType, DType>> all_pairs() {
  std::vector<std::tuple<DType, DType>> v;
  for (DType q : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
    for (DType kv : {DType::kFloat32, DType::kBFloat16, DType::kFloat16, DType::kFloat8E4M3FN, DType::kFloat8E5M2,
                     DType::kInt8, DType::kInt4})
      v.emplace_back(q, kv);
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllPairs, FastPairs, ::testing::ValuesIn(all_pairs()),
                         [](const auto& info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_" +
                                  std::string(dtype_name(std::get<1>(info.param)));
                         });

// ------------------------------------------------------------ edge cases

TestCase one_sequence(int64_t q_len, int64_t kv_len, int64_t D = 8, int64_t Hq = 4) {
  std::mt19937 rng(5);
  TestCase c;
  c.Hq = Hq;
  c.Hc = 2;
  c.D = D;
  c.ps = 4;
  c.S = 1;
  c.pps = std::max<int64_t>(1, (kv_len + 3) / 4);
  c.P = c.pps + 1;
  c.kv.assign(size_t(c.P * c.ps * c.Hc * c.D), kNaN);
  c.page_indices.resize(size_t(c.pps));
  for (int64_t k = 0; k < c.pps; ++k) c.page_indices[k] = int32_t(c.P - 1 - k);
  for (int64_t j = 0; j < kv_len; ++j)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t d = 0; d < D; ++d) c.kv_at(c.page_indices[j / 4], j % 4, h, d) = random_value(DType::kFloat32, rng);
  c.T = q_len;
  c.q.resize(size_t(q_len * Hq * D));
  for (auto& x : c.q) x = random_value(DType::kFloat32, rng);
  c.kv_lens = {int32_t(kv_len)};
  c.cu_q_lens = {0, int32_t(q_len)};
  c.num_seqs = 1;
  return c;
}

TEST(FastEdges, OneQueryOneKeyGivesV) {
  TestCase c = one_sequence(1, 1);
  const auto out = run_fast(c);
  for (int64_t h = 0; h < c.Hq; ++h)
    for (int64_t d = 0; d < c.D; ++d) EXPECT_EQ(out[h * c.D + d], c.kv_at(c.page_indices[0], 0, 1, d));
}

// q_len > kv_len: the first rows have every key masked; the exact math
// cancels the constant mask_value (softmax(s + c) = softmax(s)).
TEST(FastEdges, FullyMaskedRowsAreTheUnmaskedSoftmax) {
  for (float mask : {kDefaultMask, -1.0f, -1e9f}) {
    TestCase c = one_sequence(6, 3);
    c.mask_value = mask;
    expect_within_bound(c, run_fast(c));
  }
}

TEST(FastEdges, NonFiniteMaskValueOverAFullyMaskedRowIsNaN) {
  TestCase c = one_sequence(6, 3);
  c.mask_value = -std::numeric_limits<float>::infinity();
  const auto out = run_fast(c);
  EXPECT_TRUE(std::isnan(out[0]));  // row 0: q_span = -3, every key masked: -inf - -inf
  EXPECT_FALSE(std::isnan(out[5 * c.Hq * c.D]));  // the last row attends all three keys
}

// A NaN key inside kv_len poisons the reference's row even where it is
// masked (NaN + mask_value is NaN); the kernel must not skip it away.
TEST(FastEdges, NaNInAMaskedKeyMakesTheRowNaNAsInTheReference) {
  TestCase c = one_sequence(40, 200, 16, 4);
  c.has_window = true;
  c.window = 8;
  c.kv_at(c.page_indices[2], 1, 0, 3) = kNaN;  // key 9: masked for the last rows (window)
  const auto out = run_fast(c);
  const int64_t last = (c.T - 1) * c.Hq * c.D;
  EXPECT_TRUE(std::isnan(out[last]));
}

TEST(FastEdges, NoSequencesWritesNothing) {
  TestCase c = one_sequence(3, 5);
  c.num_seqs = 0;
  const auto out = run_fast(c);
  for (float x : out) EXPECT_EQ(x, kCanary);
}

TEST(FastEdges, EmptySequenceBeforeAnother) {
  // Sequence 0 has keys but no queries; both share the pages.
  TestCase d = one_sequence(4, 10);
  d.S = 2;
  d.page_indices.insert(d.page_indices.end(), d.page_indices.begin(), d.page_indices.end());
  d.kv_lens = {7, 10};
  d.cu_q_lens = {0, 0, 4};
  d.num_seqs = 2;
  expect_within_bound(d, run_fast(d));
}

TEST(FastEdges, ZeroKeysGiveZeros) {
  TestCase c = one_sequence(2, 0);
  const auto out = run_fast(c);
  for (float x : out) EXPECT_EQ(x, 0.0f);
}

TEST(FastEdges, OutOfRangePageIndicesAreClampedAndReported) {
  TestCase c = one_sequence(2, 8);
  TestCase clamped = c;
  c.page_indices[1] = int32_t(c.P + 5);   // clamps to the last page
  clamped.page_indices[1] = int32_t(c.P - 1);
  c.page_indices[0] = -1;                  // wraps once to the last page
  clamped.page_indices[0] = int32_t(c.P - 1);
  for (int64_t s = 0; s < c.ps; ++s)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t d = 0; d < c.D; ++d) c.kv_at(c.P - 1, s, h, d) = clamped.kv_at(c.P - 1, s, h, d) = 0.25f * float(s + h + d);
  std::vector<std::string> diag;
  const auto a = run_fast(c, {}, &diag);
  const auto b = run_fast(clamped);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same_value(a[i], b[i])) << i;
  ASSERT_FALSE(diag.empty());
  EXPECT_NE(diag[0].find("clamped"), std::string::npos) << diag[0];
}

TEST(FastEdges, LongSequencesEveryTileShapeAndThreadCount) {
  for (int64_t Hq : {1, 4, 8, 32})
    for (int64_t q_len : {1, 3, 70}) {
      TestCase c = one_sequence(q_len, 300, 128, Hq);
      for (int threads : {1, 2, 5}) {
        c.threads = threads;
        expect_within_bound(c, run_fast(c));
      }
    }
}

// KV that is converted per block (any dtype but float32 without scales)
// goes through tiles of up to eight vectors of rows: full ones, and the last
// tile of a sequence with five to seven vectors; with a window too.
TEST(FastEdges, TallTilesOfConvertedKv) {
  for (DType kv : {DType::kFloat8E4M3FN, DType::kBFloat16, DType::kFloat32})
    for (int64_t q_len : {9, 20, 41}) {
      TestCase c = one_sequence(q_len, 200, 64, 8);
      c.kv_dtype = kv;
      for (float& x : c.kv) x = std::isnan(x) ? x : round_to(kv, x);
      if (kv == DType::kFloat32) {  // a scale makes float32 KV converted too
        c.has_k_scale = true;
        c.k_scale = 0.75f;
      }
      c.threads = int(1 + q_len % 3);
      SCOPED_TRACE(describe(c) + " q_len=" + std::to_string(q_len));
      expect_within_bound(c, run_fast(c, with_bf16_dot(Options::Bf16Dot::kOff)));
      expect_within_bound_windowed(c, 50, 6.0f, with_bf16_dot(Options::Bf16Dot::kOff));
    }
}

// Each tile proves the q side of the skip itself: here token 10's q rows
// are large enough that keys masked for its whole tile still weigh as much
// as the attended ones (s + mask_value reaches the row's max), while the
// other tiles' rows make them negligible. Skipping must leave token 10's
// tile visiting every key, so the answer equals the full visit's.
TEST(FastEdges, ATileWhoseQRowsDefeatTheSkipProofVisitsTheMaskedKeys) {
  TestCase c = one_sequence(70, 300, 16, 8);  // 8 q heads on one KV head: 8 tokens a 64-row tile
  c.sm_scale = 0.05f;
  c.mask_value = -200.0f;
  for (int64_t e = 10 * c.Hq * c.D; e < 11 * c.Hq * c.D; ++e) c.q[size_t(e)] *= 2000.0f;
  // Keys 250.. (masked for tokens 8-15, q_span = 230 + token) aligned with
  // token 10's first head: s ~ 0.05 * 2 * sum |q| ~ 1600, far above the
  // attended keys' scores even after the mask's -200.
  for (int64_t j = 250; j < 300; ++j)
    for (int64_t d = 0; d < c.D; ++d)
      c.kv_at(c.page_indices[size_t(j / c.ps)], j % c.ps, 0, d) = c.q[size_t(10 * c.Hq * c.D + d)] > 0 ? 2.0f : -2.0f;
  const auto skip = run_fast(c);
  Options no_skip;
  no_skip.skip_masked_blocks = false;
  const auto full = run_fast(c, no_skip);
  for (size_t o = 0; o < skip.size(); ++o)
    ASSERT_LE(std::fabs(double(skip[o]) - full[o]), 1e-5 * (1 + std::fabs(full[o]))) << "element " << o;
}

// Decode rows over long sequences: group items split into key chunks and
// merged, with and without a window and soft cap, for float and 8-bit KV.
TEST(FastEdges, SplitDecodeSequencesMergeToTheExactMath) {
  for (DType kv : {DType::kFloat32, DType::kBFloat16, DType::kFloat8E4M3FN}) {
    for (int64_t q_len : {1, 2}) {
      TestCase c = one_sequence(q_len, 2100, 128, 4);
      c.kv_dtype = kv;
      for (float& x : c.kv) x = std::isnan(x) ? x : round_to(kv, x);
      c.sm_scale = 0.3f;
      expect_within_bound(c, run_fast(c));
      c.has_v_scale = true;
      c.v_scale = 0.5f;
      expect_within_bound_windowed(c, 900, 3.0f);
    }
  }
}

// A decode batch: every sequence q_len tokens over its kv_len keys, Hkv KV
// heads of G q heads each, head_dim 128, pages shuffled, NaN elsewhere.
TestCase decode_batch(std::mt19937& rng, DType q_dtype, DType kv_dtype, int64_t Hkv, int64_t G, int64_t q_len,
                      const std::vector<int64_t>& kv_lens, int64_t head_dim = 128) {
  TestCase c;
  c.q_dtype = q_dtype;
  c.kv_dtype = kv_dtype;
  c.Hq = Hkv * G;
  c.Hc = 2 * Hkv;
  c.D = head_dim;
  c.ps = 16;
  c.S = int64_t(kv_lens.size());
  int64_t max_kv = 1, needed = 0;
  for (int64_t kv : kv_lens) max_kv = std::max(max_kv, kv), needed += (kv + c.ps - 1) / c.ps;
  c.pps = (max_kv + c.ps - 1) / c.ps;
  c.P = needed + 2;
  std::vector<int32_t> perm(c.P);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  c.kv.assign(size_t(c.P * c.ps * c.Hc * c.D), kNaN);
  c.page_indices.assign(size_t(c.S * c.pps), std::numeric_limits<int32_t>::min());
  int64_t next_page = 0;
  for (int64_t i = 0; i < c.S; ++i) {
    for (int64_t k = 0; k < (kv_lens[i] + c.ps - 1) / c.ps; ++k) c.page_indices[i * c.pps + k] = perm[next_page++];
    for (int64_t j = 0; j < kv_lens[i]; ++j)
      for (int64_t h = 0; h < c.Hc; ++h)
        for (int64_t d = 0; d < c.D; ++d)
          c.kv_at(c.page_indices[i * c.pps + j / c.ps], j % c.ps, h, d) = random_value(kv_dtype, rng);
  }
  c.T = c.S * q_len;
  c.q.resize(size_t(c.T * c.Hq * c.D));
  for (auto& x : c.q) x = random_value(q_dtype, rng);
  c.cu_q_lens.resize(size_t(c.S + 1));
  for (int64_t i = 0; i <= c.S; ++i) c.cu_q_lens[i] = int32_t(i * q_len);
  c.kv_lens.assign(kv_lens.begin(), kv_lens.end());
  c.num_seqs = int32_t(c.S);
  c.sm_scale = 0.0884f;
  return c;
}

// Decode batches over bfloat16 and 8-bit float KV (the decode items:
// AVX512-BF16's on both of its paths, or AVX2's for bfloat16; and the
// float32 group item): every head-group shape they take (4 or 8 rows a KV
// head), one to eight KV heads an item, key counts off every block
// multiple, sequences split into key chunks; windows, soft caps and a
// small mask value. Float32 KV in the AVX2 item: Avx2DecodeItemBatches.
TEST(FastEdges, DecodeItemBatchesOfEveryHeadShapeAndKvDtype) {
  std::mt19937 rng(77);
  const std::vector<int64_t> kv_lens{1, 5, 17, 64, 333, 700};
  for (DType kv : {DType::kBFloat16, DType::kFloat8E4M3FN, DType::kFloat8E5M2})
  for (DType q : {DType::kFloat32, DType::kBFloat16})
    for (const auto& [Hkv, G, q_len] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {8, 4, 1}, {8, 4, 2}, {3, 8, 1}, {1, 4, 1}, {2, 2, 2}, {5, 1, 4}}) {
      for (const Bf16Mode& mode : kBf16Modes) {
        TestCase c = decode_batch(rng, q, kv, Hkv, G, q_len, kv_lens);
        c.threads = int(1 + rng() % 3);
        SCOPED_TRACE(describe(c) + " G=" + std::to_string(G) + " q_len=" + std::to_string(q_len) + " " + mode.name);
        const Options opt = with_bf16_mode(mode);
        expect_within_bound_as_is_and_windowed(c, opt);
        c.has_window = false;
        c.has_cap = false;
        c.mask_value = -2.0f;
        expect_within_bound(c, run_fast(c, opt));
        if (HasFatalFailure()) return;
      }
    }
}

// The AVX2 decode item (avx2_group-inl.h: float32, bfloat16, 8-bit float
// KV, up to 4 rows a KV head, head_dim a multiple of 16) runs only on the
// AVX2 target; on CPUs with AVX-512 Highway is limited to AVX2 here so
// that it is tested there too. Head dims from one 16-element chunk to past the
// item's 1024-float stack row; within the bound of the exact math.
TEST(FastEdges, Avx2DecodeItemBatches) {
  const OnlyAvx2 only;
  if (!only.ok) GTEST_SKIP() << "the CPU has no AVX2";
  ASSERT_STREQ(simd_target(), "AVX2");
  std::mt19937 rng(2026);
  for (int64_t D : {16, 48, 128, 1040})
    for (DType kv : {DType::kFloat32, DType::kBFloat16, DType::kFloat8E4M3FN, DType::kFloat8E5M2})
      for (DType q : {DType::kFloat32, DType::kBFloat16})
        for (const auto& [Hkv, G, q_len] :
             std::vector<std::tuple<int64_t, int64_t, int64_t>>{{8, 4, 1}, {2, 2, 2}, {5, 1, 4}, {1, 3, 1}}) {
          const std::vector<int64_t> kv_lens =
              D > 256 ? std::vector<int64_t>{3, 40} : std::vector<int64_t>{1, 5, 17, 64, 333};
          TestCase c = decode_batch(rng, q, kv, Hkv, G, q_len, kv_lens, D);
          c.threads = int(1 + rng() % 3);
          SCOPED_TRACE(describe(c) + " G=" + std::to_string(G) + " q_len=" + std::to_string(q_len));
          expect_within_bound_as_is_and_windowed(c);
          if (HasFatalFailure()) return;
        }
}

// k_scale / v_scale in the AVX2 item: K and V multiplied by each scale
// (times 2^8 for float8_e4m3fn) as they are read, and for bfloat16 q
// rounded to bfloat16: the reference's x.astype(f32) * scale, then
// .astype(q.dtype) (kernel.py:124-129). Every KV dtype the item takes,
// float32 and bfloat16 q; one scale or both, negative, a float32
// subnormal, and 2e36 (times 2^8 past FLT_MAX: float8_e4m3fn then takes
// the generic item), with sm_scale keeping the scores to a few units.
// The bound cannot see the rounding to bfloat16 left out (2^-9 of a value
// at most): TheAvx2DecodeItemDequantisesAsTheReference holds it.
TEST(FastEdges, Avx2DecodeItemBatchesWithScales) {
  const OnlyAvx2 only;
  if (!only.ok) GTEST_SKIP() << "the CPU has no AVX2";
  std::mt19937 rng(606);
  struct ScaledCase {
    KvScales scales;
    float sm;
  };
  const ScaledCase kCases[] = {{{true, false, 0.37f, 1.0f}, 0.0884f},
                               {{false, true, 1.0f, -1.7f}, 0.0884f},
                               {{true, true, -3.5f, 0.011f}, 0.02f},
                               {{true, true, 1e-39f, 3e-40f}, 1e37f},
                               {{true, true, 2e36f, 2e36f}, 1e-38f}};
  for (DType kv : {DType::kFloat32, DType::kBFloat16, DType::kFloat8E4M3FN, DType::kFloat8E5M2})
    for (DType q : {DType::kFloat32, DType::kBFloat16})
      for (const ScaledCase& sc : kCases) {
        TestCase c = decode_batch(rng, q, kv, 4, 4, 1, {1, 17, 64, 333}, kv == DType::kFloat32 ? 48 : 128);
        sc.scales.apply_to(c);
        c.sm_scale = sc.sm;
        c.threads = 2;
        SCOPED_TRACE(describe(c));
        expect_within_bound_as_is_and_windowed(c);
        if (HasFatalFailure()) return;
      }
}

// The AVX2 item multiplies q by 2^8 for float8_e4m3fn KV (kFp8Scale); a q
// element above FLT_MAX / 2^8 would become Inf, and the item hands such an
// item to the generic one. Here one element of each q row is +-2^121 (its
// products with K stay finite), on both sides of the limit, within the
// bound of the exact math. sm_scale 1 / 2^121 brings the scores back to a
// few units; sm_scale 0 makes every score 0 in the reference. Either way a
// score from an Inf q element is non-finite and NeedsExactScores
// recomputes it from the unscaled q (an Inf score under sm_scale 0 since
// 480e61b), so this test holds the result, not which item ran: before
// 480e61b, without QFitsScale, the sm_scale 0 rows were NaN.
TEST(FastEdges, Avx2DecodeItemLeavesQThatItsFp8ScaleWouldOverflow) {
  const OnlyAvx2 only;
  if (!only.ok) GTEST_SKIP() << "the CPU has no AVX2";
  std::mt19937 rng(404);
  for (const float big : {0x1p121f, 0x1p119f})
    for (const float sm_scale : {1.0f / big, 0.0f})
      for (DType q : {DType::kFloat32, DType::kBFloat16}) {
        TestCase c = decode_batch(rng, q, DType::kFloat8E4M3FN, 4, 4, 1, {5, 40, 333});
        for (size_t r = 0; r < c.q.size(); r += size_t(c.D)) c.q[r + 3] = (r / size_t(c.D)) % 2 ? big : -big;
        c.sm_scale = sm_scale;
        c.threads = 2;
        SCOPED_TRACE(describe(c) + " big=" + std::to_string(big) + " sm_scale=" + std::to_string(sm_scale));
        expect_within_bound(c, run_fast(c));
        if (HasFatalFailure()) return;
      }
}

// A raw score whose float32 partial sums overflow where the exact q.k is
// finite, under sm_scale 0: q all 2^127, K of key 0 at 1.5 in dims 0 and 8
// and -1.5 in dim 1 (exactly 1.5 x 2^127), every other K element 0. The
// AVX2 item's lane 0 sums dims 0 and 8 to Inf first; its score is Inf, Inf x 0 is NaN. The
// reference's scores are all 0 (kernel.py:133 multiplies by sm_scale), so
// the output is the mean of V: within the bound of the exact math, on the
// dispatched target and on AVX2. Before NeedsExactScores took an Inf score
// under sm_scale 0 as large, the AVX2 item's rows were NaN.
TEST(FastEdges, AnOverflowingRawScoreUnderAZeroSmScaleIsRecomputed) {
  std::mt19937 rng(505);
  OnDispatchedThenAvx2([&](bool avx2) {
    TestCase c = decode_batch(rng, DType::kFloat32, DType::kFloat32, 1, 4, 1, {3, 20}, 16);
    std::fill(c.q.begin(), c.q.end(), 0x1p127f);
    for (int64_t page = 0; page < c.P; ++page)  // every other score 0, not past float32's range
      for (int64_t slot = 0; slot < c.ps; ++slot)
        for (int64_t d = 0; d < c.D; ++d) c.kv_at(page, slot, 0, d) = 0.0f;
    c.kv_at(c.page_indices[0], 0, 0, 0) = 1.5f;
    c.kv_at(c.page_indices[0], 0, 0, 8) = 1.5f;
    c.kv_at(c.page_indices[0], 0, 0, 1) = -1.5f;
    c.sm_scale = 0.0f;
    SCOPED_TRACE(describe(c) + (avx2 ? " AVX2" : " dispatched"));
    expect_within_bound(c, run_fast(c));
  });
}

// 8-bit float KV with k_scale / v_scale: with bfloat16 q the decode item
// reads the dequantised values from its tables (fp8_scale_in_table), with
// float32 q the generic item runs; both within the bound of the exact
// math on the reference's dequantised values (kernel.py:124-129).
TEST(FastEdges, DecodeItemBatchesOfScaledEightBitFloatKv) {
  std::mt19937 rng(131);
  const std::vector<int64_t> kv_lens{1, 17, 64, 333};
  const KvScales kScales[] = {{true, false, 0.37f, 1.0f}, {false, true, 1.0f, -1.7f}, {true, true, -3.5f, 0.011f}};
  for (DType kv : {DType::kFloat8E4M3FN, DType::kFloat8E5M2})
    for (DType q : {DType::kBFloat16, DType::kFloat32})
      for (const KvScales& sc : kScales)
        for (const auto& [Hkv, G] : std::vector<std::pair<int64_t, int64_t>>{{8, 4}, {3, 8}})
          for (const Bf16Mode& mode : kBf16Modes) {
            TestCase c = decode_batch(rng, q, kv, Hkv, G, 1, kv_lens);
            sc.apply_to(c);
            c.threads = int(1 + rng() % 3);
            SCOPED_TRACE(describe(c) + " G=" + std::to_string(G) + " " + mode.name);
            const Options opt = with_bf16_mode(mode);
            expect_within_bound_as_is_and_windowed(c, opt);
            if (HasFatalFailure()) return;
          }
}

// Decode batches (q_len 1: decode items) and prefill-like ones (q_len 40:
// tiles) over `kvs`, q float32 and bfloat16, every bfloat16 path, each
// adjusted by `setup` and held to the float64 math.
template <class Setup>
void expect_batches_within_bound(std::mt19937& rng, std::initializer_list<DType> kvs,
                                 const std::vector<int64_t>& kv_lens, Setup setup) {
  for (DType kv : kvs)
    for (DType q : {DType::kFloat32, DType::kBFloat16})
      for (int64_t q_len : {1, 40})
        for (const Bf16Mode& mode : kBf16Modes) {
          TestCase c = decode_batch(rng, q, kv, 2, 4, q_len, kv_lens);
          setup(c);
          c.threads = int(1 + rng() % 3);
          SCOPED_TRACE(describe(c) + " q_len=" + std::to_string(q_len) + " " + mode.name);
          expect_within_bound(c, run_fast(c, with_bf16_mode(mode)));
          if (::testing::Test::HasFatalFailure()) return;
        }
}

// Batches of every KV dtype the scale applies to, over 300, 64 and 5 keys,
// with V near float32's largest, each case further adjusted by `setup`.
template <class Setup>
void expect_large_v_batches_within_bound(uint32_t seed, Setup setup) {
  std::mt19937 rng(seed);
  expect_batches_within_bound(rng, {DType::kFloat32, DType::kBFloat16, DType::kFloat8E4M3FN, DType::kInt8},
                              {300, 64, 5}, [&](TestCase& c) {
                                c.has_v_scale = true;
                                c.v_scale = 0x1p124f;
                                setup(c);
                              });
}

// V near float32's largest values (v_scale 2^124 on |V| up to 2): the
// reference's softmax weights are normalised before p.v (kernel.py:142-145),
// so its output stays finite; a flash-style O = sum e^(s - m) V over 300 keys
// would pass 3.4e38 before the division by l unless the weights are scaled
// down with it (SeqPlan::p_shift). Every KV dtype the scale applies to;
// the float64 math has the range.
TEST(FastEdges, VNearFloat32sLargestDoesNotOverflowTheAccumulator) {
  expect_large_v_batches_within_bound(2026, [](TestCase&) {});
}

// The same V under a positive mask_value of 3e38 with every score 0
// (sm_scale 0) and a sliding window of 8: the masked keys' scores are 3e38,
// so is each row's running max, and the weights' shift (p_shift, about 8)
// must not be lost in m + shift - where it was, O passed 3.4e38 and rows
// came out Inf (conform, mask_value 3e38 with v_scale 1e38: gen-501476 of
// seed 500000). Each row is the mean of its masked keys' V (of every key
// where none is masked), in float32 as in the exact math.
TEST(FastEdges, VNearFloat32sLargestUnderAPositiveMaskValueDoesNotOverflow) {
  expect_large_v_batches_within_bound(2027, [](TestCase& c) {
    c.mask_value = 3e38f;
    c.sm_scale = 0.0f;
    c.has_window = true;
    c.window = 8;
  });
}

// K near float32's largest values whose exact q.k is 0: k_scale 2^127 on
// K rows (r, -r, r', -r', ...) with r in {+-1, +-0.5}, and q rows (a, a, b,
// b, ...). The reference's einsum is exact and then rounded (kernel.py:131):
// every score 0, every row the mean of its keys' V. Float32 FMA chains
// over those K elements pass +-3.4e38 and meet Inf - Inf, a NaN score that
// must be recomputed exactly like a large one, not kept.
TEST(FastEdges, ScoresWhoseFloat32SumsOverflowAreRecomputedExactly) {
  std::mt19937 rng(1238);
  expect_batches_within_bound(
      rng, {DType::kFloat32, DType::kBFloat16, DType::kFloat8E4M3FN}, {100, 17, 3}, [&rng](TestCase& c) {
        for (int64_t i = 0; i < c.S; ++i)
          for (int64_t j = 0; j < c.kv_lens[i]; ++j)
            for (int64_t h = 0; h < c.Hc; h += 2)
              for (int64_t d = 0; d < c.D; d += 2) {
                const float r = (rng() % 2 ? 1.0f : 0.5f) * (rng() % 2 ? 1.0f : -1.0f);
                const int64_t page = c.page_indices[i * c.pps + j / c.ps];
                c.kv_at(page, j % c.ps, h, d) = r;
                c.kv_at(page, j % c.ps, h, d + 1) = -r;
              }
        for (size_t e = 0; e < c.q.size(); e += 2) c.q[e + 1] = c.q[e];
        c.has_k_scale = true;
        c.k_scale = 0x1p127f;
      });
}

// Scores past float32's range (|sm_scale| 1e37 on dot products of a few
// units): a float32 softmax - the reference's (kernel.py:142), and the
// tiles' and items' - is NaN there (Inf - Inf), while the exact math is
// finite: the largest scores' keys take all the weight. Such rows are
// recomputed in double (recompute_nonfinite_rows) and must come out within
// the bound of the float64 truth. Decode and 40-row batches through every
// item and tile of the dispatched target, then of AVX2.
TEST(FastEdges, ScoresPastFloat32sRangeGiveTheExactMathsAnswer) {
  std::mt19937 rng(37);
  OnDispatchedThenAvx2([&](bool avx2) {
    expect_batches_within_bound(rng, {DType::kFloat32, DType::kBFloat16, DType::kFloat8E4M3FN, DType::kInt8},
                                {100, 17, 3}, [&rng](TestCase& c) { c.sm_scale = rng() % 2 ? 1e37f : -1e37f; });
    if (::testing::Test::HasFatalFailure()) return;
    // Over a sliding window (decode rows, so no row has every key masked):
    // mask_value -inf, where masked keys weigh exactly 0, and -20 with
    // head_dim 1, K in {-2, -1, 1, 2} times k_scale 1.1, |q| in [4, 8) and
    // sm_scale 1e38 (every score past float32's range), where masked keys tie with the best
    // unmasked ones but for the mask term, e^-20 of their weight - which a
    // double-double score of 1e38 cannot resolve unless the term is kept
    // apart (kernel_diff found a masked tie weighing 1).
    std::uniform_real_distribution<float> big(4.0f, 8.0f);
    for (DType kv : {DType::kBFloat16, DType::kInt8})
      for (const float mask : {-std::numeric_limits<float>::infinity(), -20.0f}) {
        const bool ties = mask == -20.0f;
        TestCase c = decode_batch(rng, DType::kFloat32, kv, 2, 4, 1, {100, 17, 3}, ties ? 1 : 128);
        c.sm_scale = 1e37f;
        if (ties) {
          for (int64_t i = 0; i < c.S; ++i)
            for (int64_t j = 0; j < c.kv_lens[i]; ++j)
              for (int64_t h = 0; h < c.Hc; h += 2)
                c.kv_at(c.page_indices[i * c.pps + j / c.ps], j % c.ps, h, 0) =
                    float(rng() % 2 ? 1 : 2) * (rng() % 2 ? 1.0f : -1.0f);
          for (auto& x : c.q) x = big(rng) * (rng() % 2 ? 1.0f : -1.0f);
          c.sm_scale = 1e38f;
          // K of 24 significant bits, so that sm_scale * q.k is not exact in
          // double and the score's low part is far above 20.
          c.has_k_scale = true;
          c.k_scale = 1.1f;
        }
        c.mask_value = mask;
        c.has_window = true;
        c.window = 8;
        SCOPED_TRACE(describe(c) + " sm_scale=" + std::to_string(c.sm_scale) + (avx2 ? " AVX2" : ""));
        expect_within_bound(c, run_fast(c));
        if (::testing::Test::HasFatalFailure()) return;
      }
  });
}

// Non-finite KV through the decode item, as the reference
// (ref_ragged_paged_attention, kernel.py:132-145) has it: a NaN key inside
// kv_len makes its scores NaN, and `attn += where(mask, mask_value, 0)`
// keeps them NaN even where masked, so softmax turns the whole row NaN; a
// masked key's probability is exactly 0, and 0 x Inf in the p.v einsum is
// NaN, so an Inf in a masked key's V makes that one dim NaN; a NaN in an
// attended key's V makes that dim NaN. Everything else is the clean case's
// answer, within its bound. On the dispatched target, and with Highway
// limited to AVX2 (its decode item reads float8_e4m3fn's NaN only where
// the sequence's KV is not known finite: LoadFp8x16's kNan).
TEST(FastEdges, NonFiniteKvInTheDecodeItemPoisonsWhatTheReferencePoisons) {
  std::mt19937 rng(113);
  constexpr int64_t Hkv = 2, G = 4;
  for (bool avx2 : {false, true})
  for (DType kv : {DType::kBFloat16, DType::kFloat8E4M3FN, DType::kFloat8E5M2})
    for (DType q : {DType::kFloat32, DType::kBFloat16})
      for (const Bf16Mode& mode : kBf16Modes) {
        const OnlyAvx2 only(avx2);
        if (avx2 && !only.ok) continue;
        TestCase c = decode_batch(rng, q, kv, Hkv, G, 1, {90, 40, 17});
        c.has_window = true;
        c.window = 30;  // seq 0 (q_span 89) masks keys 0..59, seq 1 (q_span 39) keys 0..9, seq 2 none
        const Truth clean = truth_of(c);
        const bool has_inf = kv != DType::kFloat8E4M3FN;
        auto slot = [&](int64_t seq, int64_t key) { return std::pair{c.page_indices[seq * c.pps + key / c.ps], key % c.ps}; };
        std::vector<uint8_t> nan_expected(clean.out.size(), 0);
        auto expect_nan = [&](int64_t seq, int64_t g, int64_t d) {  // q_len 1: row = seq
          for (int64_t h = g * G; h < (g + 1) * G; ++h)
            for (int64_t e = 0; e < c.D; ++e)
              if (d < 0 || e == d) nan_expected[size_t((seq * c.Hq + h) * c.D + e)] = 1;
        };
        {
          const auto [page, s] = slot(0, 5);  // masked by the window
          c.kv_at(page, s, 2 * 1, 7) = kNaN;  // K of KV head 1
          expect_nan(0, 1, -1);
        }
        {
          const auto [page, s] = slot(2, 3);  // attended
          c.kv_at(page, s, 2 * 0 + 1, 11) = kNaN;  // V of KV head 0
          expect_nan(2, 0, 11);
        }
        if (has_inf) {
          const auto [page, s] = slot(1, 3);  // masked by the window
          c.kv_at(page, s, 2 * 1 + 1, 20) = std::numeric_limits<float>::infinity();  // V of KV head 1
          expect_nan(1, 1, 20);
        }
        SCOPED_TRACE(describe(c) + " " + mode.name + " on " + simd_target());
        expect_poisoned_else_within_bound(clean, run_fast(c, with_bf16_mode(mode)), [&](size_t o) {
          return nan_expected[o] ? Poisoned::kNaN : Poisoned::kNo;
        });
        if (HasFatalFailure()) return;
      }
}

// A thread's item claims the thread's next one when its last block starts,
// to stream that item's first block in (ItemAhead, GroupBf16); the thread
// then runs the claimed item instead of taking one from the queue. Every
// item still runs exactly once: on any thread count the output is the one
// thread's bit for bit, through a batch whose items alternate between the
// bfloat16 decode item (q_len 1 and 2: 4 and 8 rows a KV head), other
// group items (q_len 3) and prefill tiles (q_len 40), none split.
TEST(FastEdges, ItemsClaimedAheadRunOnceOnEveryThreadCount) {
  std::mt19937 rng(91);
  const std::vector<int64_t> kv_lens{3, 64, 17, 200, 16, 33, 90, 48, 250, 1};
  const int32_t q_lens[] = {1, 40, 2, 3, 1, 1, 40, 2, 3, 1};
  for (DType q : {DType::kFloat32, DType::kBFloat16}) {
    TestCase c = decode_batch(rng, q, DType::kBFloat16, 8, 4, 40, kv_lens);
    for (size_t i = 0; i < kv_lens.size(); ++i) c.cu_q_lens[i + 1] = c.cu_q_lens[i] + q_lens[i];
    c.threads = 1;
    const std::vector<float> one = run_fast(c);
    expect_within_bound(c, one);
    for (int threads : {2, 3, 4}) {
      c.threads = threads;
      SCOPED_TRACE(describe(c));
      const std::vector<float> many = run_fast(c);
      ASSERT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0);
    }
  }
}

// The native cache pads a slot by one cache line where it fills a multiple
// of 2 KiB (so a head's rows, a slot apart, do not all map to the same L1
// sets); elsewhere slots are packed.
TEST(FastNativeKv, SlotsArePaddedByALineOnlyWhereTheyFillAMultipleOf2KiB) {
  EXPECT_EQ(native_slot_bytes(16 * 128, 2, true), 4096 + 64);  // the bench's bfloat16 slot
  EXPECT_EQ(native_slot_bytes(16 * 128, 4, true), 8192 + 64);
  EXPECT_EQ(native_slot_bytes(16 * 128, 1, true), 2048 + 64);
  EXPECT_EQ(native_slot_bytes(16 * 128, 2, false), 4096);
  EXPECT_EQ(native_slot_bytes(6 * 128, 2, true), 1536);
  EXPECT_EQ(native_slot_bytes(2 * 13, 4, true), 104);
  EXPECT_EQ(native_slot_bytes(0, 4, true), 0);
}

// Padded and packed slots hold the same values: every path (decode items,
// the bfloat16 decode item, prefill tiles, converted and in-place rows)
// gives the same bits from either, and the padded cache is what encode_kv
// makes by default.
TEST(FastNativeKv, PaddedSlotsGiveThePackedSlotsResultsBitForBit) {
  std::mt19937 rng(5);
  for (DType kv_dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat8E4M3FN})
    for (DType q : {DType::kFloat32, DType::kBFloat16})
      for (int64_t q_len : {1, 40}) {
        TestCase c = decode_batch(rng, q, kv_dtype, 8, 4, q_len, {3, 17, 64, 200});
        c.threads = 2;
        SCOPED_TRACE(describe(c) + " q_len=" + std::to_string(q_len));
        const rpa_problem p = c.problem();
        const NativeKv padded = encode_kv(p), packed = encode_kv(p, false);
        const int64_t natural = p.num_combined_kv_heads * p.head_dim * native_elem_bytes(kv_dtype);
        ASSERT_EQ(packed.slot_bytes, natural);
        ASSERT_EQ(padded.slot_bytes, natural + 64);
        ASSERT_EQ(padded.bytes.size(), size_t(p.total_num_pages * p.page_size * padded.slot_bytes));
        std::vector<float> a(size_t(c.T * c.Hq * c.D), kCanary), b = a;
        ASSERT_EQ(attention(p, padded, a.data(), nullptr).code, RPA_OK);
        ASSERT_EQ(attention(p, packed, b.data(), nullptr).code, RPA_OK);
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
        expect_within_bound(c, a);
      }
}

// Scores of several hundred (int8 keys over their whole range, sm_scale 1):
// a float32 FMA chain is a few ulps off the exactly rounded q.k, and near-
// tied keys turn that into 1e-3 of V - more than the float32 floor, where the
// reference (whose einsum is rounded once) is exact. Such blocks are
// recomputed exactly (kExactScoresAbove): held here to the truth with the
// reference's rounded scores, for prefill tiles and decode items. (Against
// the exact truth no float32-score implementation is within the float32
// floor on such rows: the rounding of the score itself moves them.)
TEST(FastEdges, LargeScoresMatchTheReferencesRoundedScores) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (const auto& [q_len, D] : std::vector<std::pair<int64_t, int64_t>>{{12, 13}, {1, 13}, {40, 64}, {1, 128}}) {
    for (int iter = 0; iter < 6; ++iter) {
      TestCase c = decode_batch(rng, DType::kFloat32, DType::kInt8, 4, 2, q_len, {22, 57});
      c.D = D;
      c.q.resize(size_t(c.T * c.Hq * D));
      for (auto& x : c.q) x = unit(rng);
      c.kv.assign(size_t(c.P * c.ps * c.Hc * D), kNaN);
      for (int64_t i = 0; i < c.S; ++i)
        for (int64_t j = 0; j < c.kv_lens[i]; ++j)
          for (int64_t h = 0; h < c.Hc; ++h)
            for (int64_t d = 0; d < D; ++d)
              c.kv_at(c.page_indices[i * c.pps + j / c.ps], j % c.ps, h, d) = float(int(rng() % 255) - 127);
      c.sm_scale = 1.0f;
      c.has_v_scale = true;
      c.v_scale = 0.5f;
      SCOPED_TRACE(describe(c) + " q_len=" + std::to_string(q_len) + " iter=" + std::to_string(iter));
      expect_within_bound(c, run_fast(c), /*round_scores=*/true);
      if (HasFatalFailure()) return;
    }
  }
  // The bfloat16 paths (VDPBF16PS tile and decode item) recompute the same
  // way; their probabilities are rounded to bfloat16, so the exact truth
  // with bfloat16's unit roundoff judges them.
  for (int64_t q_len : {1, 30})
    for (const Bf16Mode& mode : kBf16Modes) {
      TestCase c = decode_batch(rng, DType::kBFloat16, DType::kBFloat16, 4, 4, q_len, {40, 90});
      for (float& x : c.kv) x = std::isnan(x) ? x : round_to(DType::kBFloat16, x * 60.0f);
      c.sm_scale = 1.0f;
      SCOPED_TRACE(describe(c) + " q_len=" + std::to_string(q_len) + " " + mode.name);
      expect_within_bound(c, run_fast(c, with_bf16_mode(mode)));
    }
}

// q uniform in [-1, 1]; every K and V element of the sequences' keys an
// integer lo .. lo + span - 1: integer KV over its whole range, where
// scores are products of hundreds.
void fill_unit_q_and_integer_kv(TestCase& c, std::mt19937& rng, int lo, int span) {
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (auto& x : c.q) x = unit(rng);
  for (int64_t i = 0; i < c.S; ++i)
    for (int64_t j = 0; j < c.kv_lens[i]; ++j)
      for (int64_t h = 0; h < c.Hc; ++h)
        for (int64_t d = 0; d < c.D; ++d)
          c.kv_at(c.page_indices[i * c.pps + j / c.ps], j % c.ps, h, d) = float(lo + int(rng() % unsigned(span)));
}

// Long head_dim: a tile's score is one FMA chain per lane over head_dim (K
// broadcast), rounded at every step. With head_dim 256, int4 K over its
// whole range and sm_scale 1 (scores of tens, under kExactScoresAbove:
// near one-hot probabilities) the prefill rows came out up to 1.8x the
// kernel bound from the exact truth while the chains ran over all of
// head_dim (`rpa conform --shapes large`, gen-large-1235 without its soft
// cap). Both SIMD widths: the AVX2 tile cuts its chains the same way.
TEST(FastEdges, LongHeadDimTileScoresStayWithinTheBound) {
  std::mt19937 rng(5);
  OnDispatchedThenAvx2([&](bool avx2) {
    for (int iter = 0; iter < 4; ++iter) {
      TestCase c = decode_batch(rng, DType::kFloat32, DType::kInt4, 2, 4, /*q_len=*/23, {148, 62}, /*head_dim=*/256);
      fill_unit_q_and_integer_kv(c, rng, -8, 16);
      c.sm_scale = 1.0f;
      c.has_k_scale = c.has_v_scale = true;
      c.k_scale = c.v_scale = 0.5f;
      SCOPED_TRACE(describe(c) + (avx2 ? " AVX2" : "") + " iter=" + std::to_string(iter));
      expect_within_bound(c, run_fast(c));
      if (HasFatalFailure()) return;
    }
  });
}

// Scores of tens summed from products of hundreds (int8 K over its whole
// range, q within [-1, 1], sm_scale 0.1, head_dim 96): under
// kExactScoresAbove, yet float32 chains carry rounding of the hundreds, and
// near-tied keys with V spread over 380 turn it into 0.16-0.40 of the
// kernel bound, 16-22x the reference's error (`rpa --simd avx2 conform
// --shapes large`, gen-large-201184; prefill tiles: gen-large-900128 at
// 29x). The decode items and the tiles take such scores exactly
// (ScoresIllConditioned), so the rows stay within an eighth of the bound
// (the far-worse rule's floor) of the truth with the reference's
// once-rounded scores. Decode rows (group items) and 23-token rows (tiles),
// both SIMD widths.
TEST(FastEdges, IllConditionedScoresFollowTheOnceRoundedScores) {
  std::mt19937 rng(17);
  OnDispatchedThenAvx2([&](bool avx2) {
    double worst = 0.0;
    for (int iter = 0; iter < 8; ++iter) {
      const int64_t q_len = iter < 4 ? 1 : 23;
      TestCase c = decode_batch(rng, DType::kFloat32, DType::kInt8, 1, 4, q_len, {124, 94, 40}, /*head_dim=*/96);
      fill_unit_q_and_integer_kv(c, rng, -128, 256);
      c.sm_scale = 0.102f;
      c.has_v_scale = true;
      c.v_scale = 1.5f;
      c.has_window = iter % 2 == 0;
      c.window = 7;
      const std::vector<float> got = run_fast(c);
      const Truth t = truth_of(c, /*round_scores=*/true);
      for (size_t o = 0; o < t.out.size(); ++o)
        worst = std::max(worst, std::fabs(double(got[o]) - t.out[o]) / t.bound[o]);
    }
    EXPECT_LE(worst, 0.125) << (avx2 ? "AVX2" : "best target");
  });
}

// bfloat16 q and KV with head_dim 128: the VDPBF16PS tile where the CPU has it, and the float32 tile.
TEST(FastEdges, Bfloat16TilesOfEveryRowCount) {
  for (int64_t q_len : {3, 5, 16, 70})
    for (const Bf16Mode& mode : kBf16Modes) {
      TestCase c = one_sequence(q_len, 300, 128, 8);
      c.q_dtype = c.kv_dtype = DType::kBFloat16;
      for (float& x : c.q) x = round_to(DType::kBFloat16, x);
      for (float& x : c.kv) x = round_to(DType::kBFloat16, x);
      c.sm_scale = 0.125f;
      SCOPED_TRACE("q_len=" + std::to_string(q_len) + " " + mode.name);
      const Options opt = with_bf16_mode(mode);
      expect_within_bound(c, run_fast(c, opt));
      expect_within_bound_windowed(c, 40, 5.0f, opt);
    }
}

TEST(FastEdges, TheCAbiEntryMatchesTheNativeEntry) {
  std::mt19937 rng(11);
  for (int i = 0; i < 5; ++i) {
    TestCase c = random_case(rng, DType::kBFloat16, DType::kFloat8E4M3FN);
    const auto native = run_fast(c);
    std::vector<float> out(native.size(), kCanary);
    const rpa_problem p = c.problem();
    ASSERT_EQ(rpa_fast_attention(&p, out.data()).code, RPA_OK);
    for (size_t o = 0; o < out.size(); ++o) ASSERT_TRUE(same_value(out[o], native[o]));
  }
}

TEST(FastEdges, HeadCountsTheReferenceAssertsOnAreRejected) {
  TestCase c = one_sequence(1, 1);
  c.Hc = 3;  // assert num_combined_kv_heads % 2 == 0 (kernel.py:102)
  c.kv.assign(size_t(c.P * c.ps * c.Hc * c.D), 0.5f);
  const rpa_problem p = c.problem();
  std::vector<float> out(64);
  EXPECT_EQ(rpa_fast_attention(&p, out.data()).code, RPA_ERR_REJECTED);
}

// max_abs_bits (the skip proof's bound on |q|) against the element-by-
// element definition: lengths around the vector width, signed zeros,
// subnormals, infinities and NaNs of either sign anywhere in the run.
TEST(FastEdges, MaxAbsBitsIsTheLargestMagnitudeAsAnInteger) {
  std::mt19937 rng(11);
  const float specials[] = {0.0f, -0.0f, 1e-45f, -1e-40f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), kNaN, -kNaN, 3.5f, -7.25e30f};
  for (int64_t n = 0; n <= 70; ++n) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> v(static_cast<size_t>(n));
      std::uniform_real_distribution<float> u(-100.0f, 100.0f);
      for (float& x : v) x = u(rng);
      if (n > 0 && trial % 2 == 1) v[rng() % size_t(n)] = specials[rng() % std::size(specials)];
      uint32_t want = 0;
      for (float x : v) {
        uint32_t b;
        std::memcpy(&b, &x, 4);
        want = std::max(want, b & 0x7FFFFFFFu);
      }
      ASSERT_EQ(max_abs_bits(v.data(), n), want) << "n " << n << " trial " << trial;
    }
  }
}

// A finite V element that v_scale takes past float32's range: the
// reference casts v * v_scale to q's dtype (kernel.py:128-129), Inf, and a
// masked key's weight of exactly 0 times Inf is NaN in its p.v einsum
// (kernel.py:145), so that dim of the rows that see the key masked is NaN.
// The cache's statistics of the raw values alone would let the kernel skip
// the masked block. Every other element: the case's answer with that
// element 0 (a masked key's weight is 0), within its bound.
TEST(FastEdges, VScaleOverflowInAMaskedKeyIsNaNAsInTheReference) {
  std::mt19937 rng(5);
  for (DType kv : {DType::kBFloat16, DType::kFloat8E4M3FN, DType::kFloat8E5M2})
    for (DType q : {DType::kFloat32, DType::kBFloat16}) {
      TestCase c = decode_batch(rng, q, kv, 2, 4, 1, {90, 33});
      c.has_window = true;
      c.window = 30;  // seq 0 (q_span 89) masks keys 0..59
      c.has_v_scale = true;
      c.v_scale = 1e37f;  // random values (|x| <= 2) stay finite
      const int64_t page = c.page_indices[0], slot = 5, d = 20;
      c.kv_at(page, slot, 2 * 1 + 1, d) = 0.0f;  // V of KV head 1
      const Truth clean = truth_of(c);
      c.kv_at(page, slot, 2 * 1 + 1, d) = 448.0f;  // 4.48e39 after the scale
      SCOPED_TRACE(describe(c));
      expect_poisoned_else_within_bound(clean, run_fast(c), [&](size_t o) {
        const int64_t row = int64_t(o) / (c.Hq * c.D), h = int64_t(o) / c.D % c.Hq;
        return row == 0 && h / 4 == 1 && int64_t(o) % c.D == d ? Poisoned::kNaN : Poisoned::kNo;
      });
      if (HasFatalFailure()) return;
    }
}

// The K side: a K element that k_scale takes to Inf in a masked key gives
// that key the score q[d] * Inf (kernel.py:124-132): +Inf where q[d] > 0,
// and softmax over a +Inf score is NaN for the whole row (Inf - Inf);
// -Inf where q[d] < 0, a weight of 0 for a key that had none anyway; and
// 0 * Inf = NaN where q is 0, which also makes the row NaN. Sequence 1's q
// is all 0, so the magnitudes alone (|q| * max |k|) cannot rule out the
// skip there. Every other element: the case's answer with those elements
// 0, within its bound. With a soft cap (kernel.py:141-142) the +-Inf
// scores become +-cap, finite, and only 0 * Inf stays NaN: sequence 1's
// rows are poisoned and sequence 0's are not. The cap bounds every score
// but a NaN one, so it cannot prove the skip alone (masked_negligible;
// found by the kernel_diff fuzz target: int4 K at k_scale 3e38, soft_cap
// 1e-30, sliding window 4).
TEST(FastEdges, KScaleOverflowInAMaskedKeyPoisonsTheRowsTheReferencePoisons) {
  std::mt19937 rng(6);
  for (bool cap : {false, true})
    for (DType kv : {DType::kBFloat16, DType::kFloat8E4M3FN, DType::kFloat8E5M2})
      for (DType q : {DType::kFloat32, DType::kBFloat16}) {
        TestCase c = decode_batch(rng, q, kv, 2, 4, 1, {90, 33});
        c.has_cap = cap;
        c.cap = 5.0f;
        c.has_window = true;
        c.window = 30;  // seq 0 (q_span 89) masks keys 0..59
        c.has_k_scale = true;
        // 448 * 8e35 > FLT_MAX; the random values (|x| <= 2) and their dot
        // products with q stay far below it.
        c.k_scale = 8e35f;
        const int64_t page = c.page_indices[0], slot = 5, d = 20;
        const int64_t page1 = c.page_indices[1 * c.pps], slot1 = 1;  // seq 1 (q_span 32) masks keys 0..2
        std::fill(c.q.begin() + c.Hq * c.D, c.q.begin() + 2 * c.Hq * c.D, 0.0f);
        c.kv_at(page, slot, 2 * 1, d) = 0.0f;  // K of KV head 1
        c.kv_at(page1, slot1, 2 * 1, d) = 0.0f;
        const Truth clean = truth_of(c);
        c.kv_at(page, slot, 2 * 1, d) = 448.0f;  // 3.6e38 after the scale: Inf
        c.kv_at(page1, slot1, 2 * 1, d) = 448.0f;
        SCOPED_TRACE(describe(c));
        int nan_rows = 0;
        expect_poisoned_else_within_bound(clean, run_fast(c), [&](size_t o) {
          const int64_t row = int64_t(o) / (c.Hq * c.D), h = int64_t(o) / c.D % c.Hq;
          const float qd = c.q[size_t((row * c.Hq + h) * c.D + d)];
          if (h / 4 != 1) return Poisoned::kNo;
          if (row == 1 || (qd > 0.0f && !cap)) {
            nan_rows += row == 0 && int64_t(o) % c.D == 0;
            return Poisoned::kNaN;
          }
          return row == 0 && qd == 0.0f ? Poisoned::kEither : Poisoned::kNo;  // 0 * Inf: not drawn in sequence 0
        });
        if (HasFatalFailure()) return;
        if (cap) continue;
        EXPECT_GT(nan_rows, 0);  // sequence 0's draw has a q head with q[d] > 0
        EXPECT_LT(nan_rows, 4);  // and one with q[d] < 0
      }
}

}  // namespace
}  // namespace rpa::fast
