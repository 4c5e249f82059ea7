// The case model of DESIGN.md: one attention call (entry, arguments, tensor contents) as read from JSON.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "oracle/call_args.h"

namespace rpa {

enum class Entry { kStatic, kDynamic, kKernel, kReference };
std::string_view entry_name(Entry e);

// Where the contents of q or kv_pages come from.
enum class ContentSource { kNone, kData, kNpy, kSeed };

struct TensorContent {
  ContentSource source = ContentSource::kNone;
  std::vector<float> values;  // kData / kNpy: values of the dtype, widened exactly
  std::string npy_path;       // kNpy: as written in the case
  uint64_t seed = 0;          // kSeed: see harness/data_seed.h
};

struct Case {
  std::string id;
  Entry entry = Entry::kStatic;
  CallArgs call;
  TensorContent q_content, kv_content;
  std::string where;  // "file:line", for messages
};

// A malformed input: what() names file, line and field on one line; the CLI
// prints it and exits 2.
class CaseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A tensor larger than this is refused rather than allocated.
inline constexpr int64_t kMaxMaterialisedElements = int64_t{1} << 28;

// Parses one case object. `where` ("cases.jsonl:12") prefixes errors;
// `base_dir` resolves relative .npy paths.
Case parse_case(std::string_view json_text, const std::string& where, const std::string& base_dir);

// Reads a .json file (one object, may span lines) or JSONL (one object a
// line; blank lines skipped). "-" reads stdin.
std::vector<Case> read_cases(const std::string& path);

// One JSON line for the case (contents as "data" or "data_seed").
std::string write_case(const Case& c);

// The values of q (`which` = "q") or kv_pages ("kv_pages"), materialising a
// seeded generator if needed; throws CaseError when the case has none or the
// tensor is too large.
std::vector<float> materialise_q(const Case& c);
std::vector<float> materialise_kv(const Case& c);

}  // namespace rpa
