// get_tuned_block_sizes and its helpers (tuned_block_sizes.py:1385-1481), over the table in tuned_block_sizes_table.inc.
#include "oracle/tuned_block_sizes.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <vector>

#include "oracle/messages.h"
#include "oracle/python_text.h"
#include "oracle/validate.h"

namespace rpa {
namespace {

constexpr TunedBlockSizeRow kRows[] = {
#include "oracle/tuned_block_sizes_table.inc"
};

using KeyTuple = std::tuple<std::string_view, std::string_view, std::string_view, int64_t, int64_t, int64_t,
                            int64_t, int64_t, int64_t>;

KeyTuple key_of(const TunedBlockSizeRow& r) {
  return {r.device,    r.q_dtype,   r.kv_dtype,
          r.num_q_heads_per_blk, r.num_kv_heads_per_blk, r.head_dim,
          r.page_size, r.max_num_batched_tokens, r.max_model_len};
}

// A Python dict lookup; a later duplicate key would win, as in a dict literal.
const std::map<KeyTuple, std::pair<int64_t, int64_t>>& table() {
  static const auto* m = [] {
    auto* t = new std::map<KeyTuple, std::pair<int64_t, int64_t>>();
    for (const auto& r : kRows) (*t)[key_of(r)] = {r.num_kv_pages_per_block, r.num_queries_per_block};
    return t;
  }();
  return *m;
}

// The first match of re.search(r'TPU\s*v?(\d+)', kind, re.IGNORECASE):
// byte offsets of the digit group, and its value (saturating). \s and \d are
// Unicode-aware on a str pattern; under IGNORECASE 't','p','u','v' match only
// their ASCII upper/lower case forms (checked against Python 3.11's re over
// all code points).
struct TpuMatch {
  size_t digits_begin = 0, digits_end = 0;
  int64_t value = 0;
};

bool ascii_ieq(char c, char lower) { return c == lower || c == lower - 'a' + 'A'; }

std::optional<TpuMatch> search_tpu(std::string_view kind) {
  for (size_t start = 0; start + 3 <= kind.size(); ++start) {
    if (!ascii_ieq(kind[start], 't') || !ascii_ieq(kind[start + 1], 'p') || !ascii_ieq(kind[start + 2], 'u'))
      continue;
    size_t p = start + 3;
    // \s* is greedy; giving whitespace back can never help, since what
    // follows must be 'v' or a digit.
    while (p < kind.size()) {
      const CodePoint c = decode_utf8(kind, p);
      if (!py_isspace(c.cp)) break;
      p += c.len;
    }
    // v? then \d+: if a 'v' is not followed by a digit, backtracking to
    // skip the 'v' leaves the 'v' itself to match \d, which fails.
    if (p < kind.size() && ascii_ieq(kind[p], 'v')) ++p;
    TpuMatch m;
    m.digits_begin = p;
    bool saturated = false;
    while (p < kind.size()) {
      const CodePoint c = decode_utf8(kind, p);
      const int d = py_decimal_value(c.cp);
      if (d < 0) break;
      if (!saturated) {
        if (m.value > (std::numeric_limits<int64_t>::max() - d) / 10) saturated = true;
        else m.value = m.value * 10 + d;
      }
      p += c.len;
    }
    if (p == m.digits_begin) continue;
    if (saturated) m.value = std::numeric_limits<int64_t>::max();
    m.digits_end = p;
    return m;
  }
  return std::nullopt;
}

// str.split() with no argument: runs of Unicode whitespace separate words.
std::vector<std::string_view> py_split(std::string_view s) {
  std::vector<std::string_view> words;
  size_t p = 0, word = std::string_view::npos;
  while (p < s.size()) {
    const CodePoint c = decode_utf8(s, p);
    if (py_isspace(c.cp)) {
      if (word != std::string_view::npos) words.push_back(s.substr(word, p - word)), word = std::string_view::npos;
    } else if (word == std::string_view::npos) {
      word = p;
    }
    p += c.len;
  }
  if (word != std::string_view::npos) words.push_back(s.substr(word));
  return words;
}

// Python's (x + 127) // 128 * 128 with floor division.
int64_t round_up_128(int64_t x) {
  const __int128 v = static_cast<__int128>(x) + 127;
  __int128 q = v / 128;
  if (v % 128 != 0 && v < 0) --q;
  const __int128 r = q * 128;
  return r > std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(r);
}

}  // namespace

std::span<const TunedBlockSizeRow> tuned_block_size_rows() { return kRows; }

std::optional<std::pair<int64_t, int64_t>> lookup_tuned_block_sizes(const TunedKey& k) {
  const KeyTuple key{k.device,    k.q_dtype,   k.kv_dtype,
                     k.num_q_heads_per_blk, k.num_kv_heads_per_blk, k.head_dim,
                     k.page_size, k.max_num_batched_tokens, k.max_model_len};
  const auto& t = table();
  auto it = t.find(key);
  if (it == t.end()) return std::nullopt;
  return it->second;
}

int64_t next_power_of_2(__int128 x) {
  if (x <= 0) raise_py(Msg::kAssertNextPowerOf2Positive);  // tuned_block_sizes.py:1394
  if (x == 1) return 1;
  // 1 << (x - 1).bit_length()
  __int128 p = 1;
  while (p < x) {
    if (p > (static_cast<__int128>(1) << 62)) return std::numeric_limits<int64_t>::max();
    p <<= 1;
  }
  return p > std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(p);
}

int64_t get_tpu_version(std::string_view kind) {
  if (kind.find("TPU") == std::string_view::npos) return -1;  // :1427, case-sensitive
  if (kind == "TPU7x") return 7;                              // :1429
  auto m = search_tpu(kind);                                  // :1431
  if (!m) raise_py(Msg::kAssertTpuVersionMatch, {std::string(kind)});  // :1432
  return m->value;                                            // :1433 int(match.group(1))
}

std::string get_device_name(std::string_view kind) {
  if (auto m = search_tpu(kind))
    return "TPU v" + std::string(kind.substr(m->digits_begin, m->digits_end - m->digits_begin));
  auto words = py_split(kind);
  std::string name;
  for (size_t k = 0; k < words.size() && k < 2; ++k) {
    if (k) name += ' ';
    name += words[k];
  }
  return name;
}

// get_tuned_block_sizes, tuned_block_sizes.py:1445-1481.
BlockSizes get_tuned_block_sizes(DType q_dtype, DType kv_dtype, int64_t num_q_heads_per_blk,
                                 int64_t num_kv_heads_per_blk, int64_t head_dim, int64_t page_size,
                                 int64_t max_num_batched_tokens, int64_t pages_per_seq,
                                 const std::string& device_kind) {
  const int64_t tpu_version = get_tpu_version(device_kind);     // :1456
  if (tpu_version < 4) raise_py(Msg::kTpuVersionTooOld);        // :1457-1458
  // simplify_key (:1400-1421), its asserts in tuple order.
  TunedKey key;
  key.q_dtype = std::string(dtype_name(q_dtype));
  key.kv_dtype = std::string(dtype_name(kv_dtype));
  key.num_q_heads_per_blk = next_power_of_2(num_q_heads_per_blk);
  key.num_kv_heads_per_blk = next_power_of_2(num_kv_heads_per_blk);
  key.head_dim = round_up_128(head_dim);
  key.page_size = next_power_of_2(page_size);
  key.max_num_batched_tokens = next_power_of_2(max_num_batched_tokens);
  key.max_model_len = next_power_of_2(static_cast<__int128>(page_size) * pages_per_seq);
  key.device = get_device_name(device_kind);                    // :1470
  int64_t bkv = 128, bq = 32;                                   // :1473
  if (tpu_version == 4) {
    bkv = 32, bq = 32;                                          // :1474-1477
  } else if (auto hit = lookup_tuned_block_sizes(key)) {        // :1478-1480
    bkv = hit->first, bq = hit->second;
  }
  return {std::min(pages_per_seq, bkv), std::min(max_num_batched_tokens, bq)};  // :1481
}

}  // namespace rpa
