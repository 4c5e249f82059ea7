// Tests of get_tuned_block_sizes: device-kind parsing, key simplification, and rows of the upstream table.
#include "oracle/tuned_block_sizes.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "oracle/py_error.h"
#include "oracle/validate.h"

namespace rpa {
namespace {

std::string raised(const std::function<void()>& f) {
  try {
    f();
  } catch (const PyError& e) {
    return e.cls() + ": " + e.message();
  }
  return "";
}

// get_tpu_version (tuned_block_sizes.py:1424-1433). Expected values follow
// Python: 'TPU' not in kind is case-sensitive, the regex is not.
TEST(TpuVersion, DeviceKinds) {
  EXPECT_EQ(get_tpu_version("cpu"), -1);
  EXPECT_EQ(get_tpu_version(""), -1);
  EXPECT_EQ(get_tpu_version("tpu v5"), -1);
  EXPECT_EQ(get_tpu_version("NVIDIA H100"), -1);
  EXPECT_EQ(get_tpu_version("TPU v4"), 4);
  EXPECT_EQ(get_tpu_version("TPU v5 lite"), 5);
  EXPECT_EQ(get_tpu_version("TPU v5p"), 5);
  EXPECT_EQ(get_tpu_version("TPU v6 lite"), 6);
  EXPECT_EQ(get_tpu_version("TPU7x"), 7);
  EXPECT_EQ(get_tpu_version("TPU7X"), 7);     // not the literal 'TPU7x', but the regex reads 7
  EXPECT_EQ(get_tpu_version("TPUv6"), 6);
  EXPECT_EQ(get_tpu_version("TPU V6"), 6);    // IGNORECASE
  EXPECT_EQ(get_tpu_version("TPU \t v6"), 6); // \s*
  EXPECT_EQ(get_tpu_version("TPU v004"), 4);  // int('004')
  EXPECT_EQ(get_tpu_version("TPU v10"), 10);
  EXPECT_EQ(get_tpu_version("tpu v6 TPU v5"), 6);  // the first match wins
  EXPECT_EQ(get_tpu_version("TPU\xc2\xa0v6"), 6);  // U+00A0 is \s for a str pattern
  EXPECT_EQ(get_tpu_version("TPU v\xd9\xa5"), 5);  // U+0665 ARABIC-INDIC DIGIT FIVE is \d, int() reads 5
  EXPECT_EQ(get_tpu_version("TPU v99999999999999999999999"), INT64_MAX);  // saturates; >= 4 either way
  EXPECT_EQ(raised([] { get_tpu_version("TPU abc"); }), "AssertionError: TPU abc");
  EXPECT_EQ(raised([] { get_tpu_version("TPU vv6"); }), "AssertionError: TPU vv6");
  EXPECT_EQ(raised([] { get_tpu_version("TPU"); }), "AssertionError: TPU");
  EXPECT_EQ(raised([] { get_tpu_version("TPU-v6"); }), "AssertionError: TPU-v6");
}

// get_device_name (tuned_block_sizes.py:1436-1442).
TEST(DeviceName, DeviceKinds) {
  EXPECT_EQ(get_device_name("TPU v5 lite"), "TPU v5");
  EXPECT_EQ(get_device_name("TPU v6e"), "TPU v6");
  EXPECT_EQ(get_device_name("TPU7x"), "TPU v7");
  EXPECT_EQ(get_device_name("TPU v05"), "TPU v05");
  EXPECT_EQ(get_device_name("TPU v\xd9\xa5"), "TPU v\xd9\xa5");
  EXPECT_EQ(get_device_name("cpu  device  zero"), "cpu device");
  EXPECT_EQ(get_device_name(""), "");
}

// next_power_of_2 (tuned_block_sizes.py:1385-1397).
TEST(NextPowerOf2, Values) {
  EXPECT_EQ(next_power_of_2(1), 1);
  EXPECT_EQ(next_power_of_2(2), 2);
  EXPECT_EQ(next_power_of_2(3), 4);
  EXPECT_EQ(next_power_of_2(1024), 1024);
  EXPECT_EQ(next_power_of_2(1025), 2048);
  EXPECT_EQ(raised([] { next_power_of_2(0); }), "AssertionError: ");
  EXPECT_EQ(raised([] { next_power_of_2(-3); }), "AssertionError: ");
}

// Rows copied by hand from tuned_block_sizes.py at cec06d116c (the same key
// appears in both tables with different values: lines 242 and 914).
TEST(TunedTable, RowsFromTheSource) {
  const auto v6 = lookup_tuned_block_sizes({"TPU v6", "bfloat16", "bfloat16", 4, 1, 128, 128, 4096, 2048});
  ASSERT_TRUE(v6);
  EXPECT_EQ(*v6, std::make_pair(int64_t{16}, int64_t{128}));  // :242
  const auto v5 = lookup_tuned_block_sizes({"TPU v5", "bfloat16", "bfloat16", 4, 1, 128, 128, 4096, 2048});
  ASSERT_TRUE(v5);
  EXPECT_EQ(*v5, std::make_pair(int64_t{16}, int64_t{64}));  // :914
  const auto first = lookup_tuned_block_sizes({"TPU v6", "bfloat16", "bfloat16", 12, 2, 128, 128, 1024, 1024});
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, std::make_pair(int64_t{8}, int64_t{32}));  // :40
  const auto last = lookup_tuned_block_sizes({"TPU v5", "bfloat16", "bfloat16", 8, 4, 128, 64, 512, 512});
  ASSERT_TRUE(last);
  EXPECT_EQ(*last, std::make_pair(int64_t{8}, int64_t{32}));  // :1379
  EXPECT_FALSE(lookup_tuned_block_sizes({"TPU v7", "bfloat16", "bfloat16", 4, 1, 128, 128, 4096, 2048}));
  EXPECT_FALSE(lookup_tuned_block_sizes({"TPU v6", "float32", "bfloat16", 4, 1, 128, 128, 4096, 2048}));
  // The table holds 668 + 668 entries (lines 40-707 and 712-1379).
  EXPECT_EQ(tuned_block_size_rows().size(), 1336u);
}

BlockSizes tuned(int64_t qh, int64_t kvh, int64_t hd, int64_t ps, int64_t tokens, int64_t pps, const std::string& kind,
                 DType q = DType::kBFloat16, DType kv = DType::kBFloat16) {
  return get_tuned_block_sizes(q, kv, qh, kvh, hd, ps, tokens, pps, kind);
}

// get_tuned_block_sizes (tuned_block_sizes.py:1445-1481): the key is
// simplified (powers of two, head_dim rounded up to 128), then clipped by
// pages_per_seq and the token count.
TEST(TunedBlockSizes, Lookup) {
  // 3 q heads -> 4, head_dim 100 -> 128, page 100 -> 128, 3000 tokens -> 4096, 100 * 13 = 1300 -> 2048.
  BlockSizes b = tuned(3, 1, 100, 100, 3000, 13, "TPU v6 lite");
  EXPECT_EQ(b.num_kv_pages_per_blk, 13);   // min(13, 16)
  EXPECT_EQ(b.num_q_per_blk, 128);
  b = tuned(3, 1, 100, 100, 3000, 13, "TPU v5 lite");
  EXPECT_EQ(b.num_kv_pages_per_blk, 13);
  EXPECT_EQ(b.num_q_per_blk, 64);
  b = tuned(4, 1, 128, 128, 4096, 16, "TPU v5p");
  EXPECT_EQ(b.num_kv_pages_per_blk, 16);
  EXPECT_EQ(b.num_q_per_blk, 64);
  // TPU v4: (32, 32), clipped.
  b = tuned(4, 1, 128, 128, 4096, 16, "TPU v4");
  EXPECT_EQ(b.num_kv_pages_per_blk, 16);
  EXPECT_EQ(b.num_q_per_blk, 32);
  // Not in the table (TPU7x, or another dtype): the default (128, 32).
  b = tuned(4, 1, 128, 128, 4096, 200, "TPU7x");
  EXPECT_EQ(b.num_kv_pages_per_blk, 128);
  EXPECT_EQ(b.num_q_per_blk, 32);
  b = tuned(4, 1, 128, 128, 20, 16, "TPU v6 lite", DType::kFloat32, DType::kFloat32);
  EXPECT_EQ(b.num_kv_pages_per_blk, 16);
  EXPECT_EQ(b.num_q_per_blk, 20);
  // A Unicode digit reads as version 6 but names device 'TPU v\u0666', not in the table.
  b = tuned(4, 1, 128, 128, 4096, 16, "TPU v\xd9\xa6");
  EXPECT_EQ(b.num_q_per_blk, 32);
}

TEST(TunedBlockSizes, Errors) {
  EXPECT_EQ(raised([] { tuned(4, 1, 128, 128, 4096, 16, "cpu"); }), "NotImplementedError: TPU version must be 4 or higher.");
  EXPECT_EQ(raised([] { tuned(4, 1, 128, 128, 4096, 16, "TPU v3"); }), "NotImplementedError: TPU version must be 4 or higher.");
  EXPECT_EQ(raised([] { tuned(4, 1, 128, 128, 4096, 16, "TPU abc"); }), "AssertionError: TPU abc");
  // The version is read before the key: cpu with a zero argument is NotImplementedError.
  EXPECT_EQ(raised([] { tuned(0, 1, 128, 128, 4096, 16, "cpu"); }), "NotImplementedError: TPU version must be 4 or higher.");
  // simplify_key's asserts fire even on TPU v4, whose sizes ignore the key.
  for (int arg = 0; arg < 5; ++arg) {
    int64_t v[5] = {4, 1, 128, 4096, 16};  // q heads, kv heads, page_size, tokens, pages_per_seq
    v[arg] = 0;
    EXPECT_EQ(raised([&] { tuned(v[0], v[1], 128, v[2], v[3], v[4], "TPU v4"); }), "AssertionError: ") << arg;
  }
  // head_dim is rounded, never asserted.
  EXPECT_EQ(raised([] { tuned(4, 1, 0, 128, 4096, 16, "TPU v6 lite"); }), "");
}

}  // namespace
}  // namespace rpa
