// Tests of case reading: the DESIGN.md format, int/float distinction, and one-line errors for malformed input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "harness/case.h"
#include "harness/data_seed.h"
#include "harness/npy.h"

namespace rpa {
namespace {

const char* kValid = R"({"id": "c1", "entry": "reference",
 "q": {"shape": [2, 2, 2], "dtype": "bfloat16", "data": [1, 0.5, -2, 0.25, 3, 4, 5, 6]},
 "kv_pages": {"shape": [1, 2, 2, 2], "dtype": "float8_e4m3fn", "data_seed": 7},
 "kv_lens": {"shape": [1], "dtype": "int32", "data": [2]},
 "page_indices": {"shape": [1, 1], "dtype": "int32", "data": [0]},
 "cu_q_lens": {"shape": [2], "dtype": "int32", "data": [0, 2]},
 "num_seqs": {"shape": [1], "dtype": "int32", "data": [1]},
 "sm_scale": 1.0, "sliding_window": 4, "soft_cap": null, "k_scale": 1,
 "v_scale": 1e-05, "device_kind": "TPU v5 lite"})";

TEST(CaseParse, ReadsTheDesignFormat) {
  Case c = parse_case(kValid, "t.jsonl:1", ".");
  EXPECT_EQ(c.id, "c1");
  EXPECT_EQ(c.entry, Entry::kReference);
  EXPECT_EQ(c.call.q.dtype, DType::kBFloat16);
  EXPECT_EQ(c.call.q.shape, (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(c.q_content.values[2], -2.0f);
  EXPECT_EQ(c.kv_content.source, ContentSource::kSeed);
  EXPECT_EQ(c.call.page_indices.shape, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(c.call.cu_q_lens.data, (std::vector<int64_t>{0, 2}));
  // DESIGN.md: a literal with '.', 'e' or 'E' is a Python float, else an int.
  EXPECT_TRUE(c.call.sm_scale.is_float());
  EXPECT_EQ(c.call.sliding_window.kind, PyValue::Kind::kInt);
  EXPECT_EQ(c.call.k_scale.kind, PyValue::Kind::kInt);
  EXPECT_TRUE(c.call.v_scale.is_float());
  EXPECT_TRUE(c.call.soft_cap.is_none());
  EXPECT_TRUE(c.call.mask_value.is_none());
  EXPECT_EQ(*c.call.device_kind, "TPU v5 lite");
}

TEST(CaseParse, HugeIntegerLiteralsStayIntegers) {
  std::string s = kValid;
  s.replace(s.find("\"sliding_window\": 4"), 19, "\"sliding_window\": -100000000000000000000000");
  Case c = parse_case(s, "t:1", ".");
  ASSERT_EQ(c.call.sliding_window.kind, PyValue::Kind::kInt);
  EXPECT_EQ(c.call.sliding_window.i.str(), "-100000000000000000000000");
}

TEST(CaseParse, SeededContentsAreTheDocumentedGenerator) {
  // splitmix64's published first output for state 0 (Vigna's reference code).
  EXPECT_EQ(splitmix64(0), 0xE220A8397B1DCDAFull);
  Case c = parse_case(kValid, "t:1", ".");
  auto kv = materialise_kv(c);
  ASSERT_EQ(kv.size(), 8u);
  for (size_t i = 0; i < kv.size(); ++i) {
    EXPECT_TRUE(representable(DType::kFloat8E4M3FN, kv[i]));
    EXPECT_LT(std::fabs(kv[i]), 1.0f);
  }
  EXPECT_EQ(kv, materialise_kv(parse_case(kValid, "u:1", ".")));
}

std::string with(const std::string& from, const std::string& to) {
  std::string s = kValid;
  auto p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  s.replace(p, from.size(), to);
  return s;
}

void expect_error(const std::string& text, const std::string& needle) {
  try {
    parse_case(text, "cases.jsonl:3", ".");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const CaseError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cases.jsonl:3"), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
  }
}

TEST(CaseParse, MalformedInputNamesFileLineAndField) {
  expect_error("{\"id\": ", "invalid JSON");
  expect_error("[1, 2]", "expected a JSON object");
  expect_error(with("\"entry\": \"reference\"", "\"entry\": \"kernal\""), "entry");
  expect_error(with("\"dtype\": \"bfloat16\"", "\"dtype\": \"bfloat17\""), "q.dtype");
  expect_error(with("\"shape\": [2, 2, 2]", "\"shape\": [2, -2, 2]"), "q.shape[1]");
  expect_error(with("\"shape\": [2, 2, 2]", "\"shape\": [2, 2, 3]"), "q.data");
  // 0.3 is not a bfloat16 value: the error names the index and the value.
  expect_error(with("[1, 0.5, -2", "[1, 0.3, -2"), "q.data[1]");
  expect_error(with("\"data\": [2]}", "\"data\": [2147483648]}"), "kv_lens.data[0]");
  expect_error(with("\"soft_cap\": null", "\"soft_cap\": \"big\""), "soft_cap");
}

TEST(CaseParse, ShapesTooLargeToMaterialiseAreRefused) {
  Case c = parse_case(with("\"shape\": [1, 2, 2, 2], \"dtype\": \"float8_e4m3fn\"",
                           "\"shape\": [100000, 100000, 2, 128], \"dtype\": \"float8_e4m3fn\""),
                      "t:1", ".");
  EXPECT_THROW(materialise_kv(c), CaseError);  // no allocation attempted
}

TEST(Npy, RoundTripsFloat32AndBitPatterns) {
  const std::string dir = ::testing::TempDir();
  const std::vector<int64_t> shape{2, 3};
  const std::vector<float> v{1, -2, 0.5f, NAN, INFINITY, -0.0f};
  write_npy_f32(dir + "/a.npy", shape, v);
  NpyArray a = read_npy(dir + "/a.npy");
  EXPECT_EQ(a.descr, "<f4");
  EXPECT_EQ(a.shape, shape);
  auto back = npy_to_values(a, DType::kFloat32, "a");
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(std::bit_cast<uint32_t>(back[i]), std::bit_cast<uint32_t>(v[i]));

  std::vector<uint32_t> bits;
  for (float x : {1.0f, -2.0f, 0.5f, 448.0f, -0.0f, 3.0f}) bits.push_back(encode(DType::kFloat8E4M3FN, x));
  write_npy_bits(dir + "/b.npy", shape, DType::kFloat8E4M3FN, bits);
  auto vals = npy_to_values(read_npy(dir + "/b.npy"), DType::kFloat8E4M3FN, "b");
  EXPECT_EQ(vals[3], 448.0f);
  EXPECT_TRUE(std::signbit(vals[4]));
}

TEST(Npy, CaseContentsFromNpyFiles) {
  const std::string dir = ::testing::TempDir();
  std::vector<uint32_t> bits;
  for (int i = 0; i < 8; ++i) bits.push_back(encode(DType::kBFloat16, float(i) - 3.5f));
  write_npy_bits(dir + "/q.npy", std::vector<int64_t>{2, 2, 2}, DType::kBFloat16, bits);
  Case c = parse_case(with("\"data\": [1, 0.5, -2, 0.25, 3, 4, 5, 6]", "\"npy\": \"q.npy\""), "t:1", dir);
  EXPECT_EQ(c.q_content.values[0], -3.5f);
  EXPECT_EQ(c.q_content.values[7], 3.5f);
  expect_error(with("\"data\": [1, 0.5, -2, 0.25, 3, 4, 5, 6]", "\"npy\": \"missing.npy\""), "missing.npy");
}

TEST(CaseWrite, RoundTripsThroughTheReader) {
  Case c = parse_case(kValid, "t:1", ".");
  Case d = parse_case(write_case(c), "t:2", ".");
  EXPECT_EQ(d.id, c.id);
  EXPECT_EQ(d.q_content.values, c.q_content.values);
  EXPECT_EQ(d.call.k_scale.kind, PyValue::Kind::kInt);
  EXPECT_TRUE(d.call.v_scale.is_float());
  EXPECT_EQ(d.call.v_scale.f, 1e-05);
  EXPECT_EQ(d.kv_content.seed, 7u);
}

}  // namespace
}  // namespace rpa

namespace rpa {
namespace {

TEST(CaseParse, PythonsNonFiniteFloatTokensAreFloats) {
  // json.dumps writes float('nan') / float('inf') as bare NaN / Infinity.
  std::string s = kValid;
  s.replace(s.find("\"soft_cap\": null"), 16, "\"soft_cap\": NaN, \"mask_value\": -Infinity");
  s.replace(s.find("\"sm_scale\": 1.0"), 15, "\"sm_scale\": Infinity");
  Case c = parse_case(s, "t:1", ".");
  ASSERT_TRUE(c.call.soft_cap.is_float());
  EXPECT_TRUE(std::isnan(c.call.soft_cap.f));
  EXPECT_EQ(c.call.mask_value.f, -INFINITY);
  EXPECT_EQ(c.call.sm_scale.f, INFINITY);
  // Inside strings the words are left alone.
  s.replace(s.find("\"id\": \"c1\""), 10, "\"id\": \"NaN Infinity\"");
  EXPECT_EQ(parse_case(s, "t:1", ".").id, "NaN Infinity");
  // And they are written back the way Python writes them.
  Case d = parse_case(write_case(c), "t:2", ".");
  EXPECT_TRUE(std::isnan(d.call.soft_cap.f));
  EXPECT_EQ(d.call.mask_value.f, -INFINITY);
  EXPECT_NE(write_case(c).find("-Infinity"), std::string::npos);
}

TEST(CaseWrite, HugeIntegersRoundTripExactly) {
  std::string s = kValid;
  s.replace(s.find("\"sliding_window\": 4"), 19, "\"sliding_window\": 123456789012345678901234567890");
  Case c = parse_case(s, "t:1", ".");
  Case d = parse_case(write_case(c), "t:2", ".");
  ASSERT_EQ(d.call.sliding_window.kind, PyValue::Kind::kInt);
  EXPECT_EQ(d.call.sliding_window.i.str(), "123456789012345678901234567890");
}

}  // namespace
}  // namespace rpa
