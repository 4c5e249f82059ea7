// Tests of the upstream cases' page contents handed from one case to the next (UpstreamOptions::kv_values).
#include "harness/upstream_cases.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "harness/data_seed.h"

namespace rpa {
namespace {

// NaN padding compares by its bits, as the kernels read it.
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return false;
  return true;
}

TEST(UpstreamCases, PagesDrawnForOneShapeAreThoseOfAnotherWithTheSameKvLens) {
  const SeqLens decode = scaled_seq_lens(upstream_seq_lens("decode_only"), 16);
  const SeqLens mixed = scaled_seq_lens(upstream_seq_lens("mixed"), 16);
  for (DType kv : {DType::kFloat32, DType::kBFloat16, DType::kFloat8E4M3FN}) {
    SCOPED_TRACE(std::string(dtype_name(kv)));
    const Case first = upstream_case("d", decode, 4, 2, 16, 4, DType::kFloat32, kv, UpstreamOptions{});
    const Case drawn = upstream_case("m", mixed, 4, 2, 16, 4, DType::kFloat32, kv, UpstreamOptions{});
    UpstreamOptions reuse;
    reuse.kv_values = &first.kv_content.values;
    const Case handed = upstream_case("m", mixed, 4, 2, 16, 4, DType::kFloat32, kv, reuse);
    ASSERT_TRUE(same_bits(handed.kv_content.values, drawn.kv_content.values));
    // The rest of the case is the shape's own.
    EXPECT_EQ(handed.call.q.shape, drawn.call.q.shape);
    EXPECT_TRUE(same_bits(handed.q_content.values, drawn.q_content.values));
    EXPECT_EQ(handed.call.cu_q_lens.data, drawn.call.cu_q_lens.data);
    EXPECT_EQ(handed.call.page_indices.data, drawn.call.page_indices.data);
    // The pages are the ones handed over, not drawn again.
    std::vector<float> marked = first.kv_content.values;
    marked[5] = 0.25f;  // a value the generator can give, so only its place tells
    reuse.kv_values = &marked;
    const Case from_marked = upstream_case("m", mixed, 4, 2, 16, 4, DType::kFloat32, kv, reuse);
    EXPECT_EQ(from_marked.kv_content.values[5], 0.25f);
    EXPECT_NE(drawn.kv_content.values[5], 0.25f);
    // And the drawn pages are the documented generator's values where a
    // sequence's keys lie (the first page holds the first sequence's keys).
    EXPECT_EQ(std::bit_cast<uint32_t>(drawn.kv_content.values[0]),
              std::bit_cast<uint32_t>(seeded_value(kv, UpstreamOptions{}.seed + 1, 0)));
  }
}

TEST(UpstreamCases, PageContentsOfAnotherGeometryAreRefused) {
  const SeqLens lens = scaled_seq_lens(upstream_seq_lens("decode_only"), 16);
  const Case first = upstream_case("d", lens, 4, 2, 16, 4, DType::kFloat32, DType::kBFloat16, UpstreamOptions{});
  UpstreamOptions reuse;
  reuse.kv_values = &first.kv_content.values;
  reuse.num_pages = 1001;
  EXPECT_THROW(upstream_case("d", lens, 4, 2, 16, 4, DType::kFloat32, DType::kBFloat16, reuse), std::invalid_argument);
}

}  // namespace
}  // namespace rpa
