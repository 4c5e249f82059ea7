// Tests of the message table: one entry per Msg, placeholders filled in order, and docs/errors.md listing every entry.
#include "oracle/messages.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "oracle/py_error.h"

namespace rpa {
namespace {

size_t placeholders(std::string_view t) {
  size_t n = 0;
  for (char c : t) n += c == '{';
  return n;
}

TEST(Messages, TableIsComplete) {
  std::set<std::string_view> keys;
  const std::set<std::string_view> classes = {"ValueError", "AssertionError", "ZeroDivisionError",
                                              "NotImplementedError", "TypeError"};
  for (const auto& t : message_templates()) {
    EXPECT_TRUE(keys.insert(t.key).second) << t.key;
    EXPECT_TRUE(classes.count(t.cls)) << t.key;
    EXPECT_FALSE(t.function.empty()) << t.key;
    EXPECT_FALSE(t.source.empty()) << t.key;
    EXPECT_EQ(&message_template(t.id), &t);
    // Bare asserts have no message.
    if (t.cls == "AssertionError" && t.id != Msg::kAssertTpuVersionMatch) {
      EXPECT_EQ(t.text, "") << t.key;
    }
  }
}

TEST(Messages, FormatsLikeAnFString) {
  EXPECT_EQ(format_message(Msg::kNumSeqsShape, {"(2,)"}), "num_seqs.shape=(2,) must be (1,)");
  EXPECT_EQ(format_message(Msg::kHeadDimMismatch, {"128", "64"}), "Q head_dim 128 must be the same as that of K/V 64.");
  EXPECT_EQ(format_message(Msg::kCuQLensShape, {"(3,)", "4"}),
            "Expected cu_q_lens.shape=(3,) to be (4,)  where `max_num_seqs` is `page_indices.shape[0]`.");
  EXPECT_EQ(format_message(Msg::kTotalQTokens, {"70", "64"}),
            "Total q tokens 70 must be less or equal to max_num_batched_tokens=64.");
  EXPECT_EQ(format_message(Msg::kAssertTpuVersionMatch, {"TPU abc"}), "TPU abc");
  EXPECT_THROW(format_message(Msg::kNumSeqsShape, {}), std::logic_error);
  EXPECT_THROW(format_message(Msg::kNumSeqsShape, {"a", "b"}), std::logic_error);
  try {
    raise_py(Msg::kSoftCapZero, {"0"});
    FAIL();
  } catch (const PyError& e) {
    EXPECT_EQ(e.cls(), "ValueError");
    EXPECT_EQ(e.message(), "soft_cap=0 must not be 0.0.");
  }
}

TEST(Messages, ValuesPerTemplate) {
  for (const auto& t : message_templates()) {
    // Every template formats with exactly its number of placeholders.
    std::vector<std::string> v(placeholders(t.text), "x");
    std::string out;
    switch (v.size()) {
      case 0: out = format_message(t.id, {}); break;
      case 1: out = format_message(t.id, {v[0]}); break;
      case 2: out = format_message(t.id, {v[0], v[1]}); break;
      case 3: out = format_message(t.id, {v[0], v[1], v[2]}); break;
      case 4: out = format_message(t.id, {v[0], v[1], v[2], v[3]}); break;
      default: FAIL() << t.key;
    }
    EXPECT_EQ(out.find('{'), std::string::npos) << t.key;
  }
}

// docs/errors.md holds the table for readers: every key must appear there.
TEST(Messages, DocumentedInDocsErrors) {
  std::ifstream in(std::string(RPA_SOURCE_DIR) + "/docs/errors.md");
  ASSERT_TRUE(in) << "docs/errors.md";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  for (const auto& t : message_templates())
    EXPECT_NE(doc.find("`" + std::string(t.key) + "`"), std::string::npos) << t.key;
}

}  // namespace
}  // namespace rpa
