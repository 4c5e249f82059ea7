// Reading and writing case JSON / JSONL (DESIGN.md "A case"), with one-line errors naming file, line and field.
#include "harness/case.h"

#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "harness/data_seed.h"
#include "harness/json_reader.h"
#include "harness/npy.h"

namespace rpa {
namespace {

using json = nlohmann::json;

constexpr std::string_view kEntryNames[] = {"static", "dynamic", "kernel", "reference"};

[[noreturn]] void fail(const std::string& where, const std::string& field, const std::string& what) {
  throw CaseError(where + ": field '" + field + "': " + what);
}

std::string short_json(const json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// A non-finite float written as Python's bare NaN / Infinity / -Infinity.
std::optional<double> marked_float(const json& v) {
  if (!v.is_string()) return std::nullopt;
  const auto& s = v.get_ref<const std::string&>();
  if (!s.starts_with(kFloatMarker)) return std::nullopt;
  const std::string_view x = std::string_view(s).substr(kFloatMarker.size());
  if (x == "nan") return std::numeric_limits<double>::quiet_NaN();
  return x == "inf" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

bool is_big_int(const json& v) {
  return v.is_string() && v.get_ref<const std::string&>().starts_with(kBigIntMarker);
}

BigInt big_int_of(const json& v) {
  if (v.is_number_unsigned()) return BigInt(v.get<uint64_t>());
  if (v.is_number_integer()) return BigInt(v.get<int64_t>());
  return BigInt(v.get_ref<const std::string&>().substr(kBigIntMarker.size()));
}

// A keyword option: null/absent -> None, true/false -> bool, an integer
// literal -> int, a literal with '.', 'e' or 'E' -> float (DESIGN.md).
PyValue parse_option(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return PyValue::none();
  if (it->is_boolean()) return PyValue::boolean(it->get<bool>());
  if (it->is_number_integer() || is_big_int(*it)) return PyValue::integer(big_int_of(*it));
  if (it->is_number_float()) return PyValue::floating(it->get<double>());
  if (auto f = marked_float(*it)) return PyValue::floating(*f);
  fail(where, key, "expected null, a boolean or a number, got " + short_json(*it));
}

std::vector<int64_t> parse_shape(const json& t, const std::string& where, const std::string& field) {
  auto it = t.find("shape");
  if (it == t.end()) fail(where, field + ".shape", "missing");
  if (!it->is_array()) fail(where, field + ".shape", "expected an array of non-negative integers");
  std::vector<int64_t> shape;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& d = (*it)[i];
    if (!d.is_number_integer() || (d.is_number_integer() && !d.is_number_unsigned() && d.get<int64_t>() < 0))
      fail(where, field + ".shape[" + std::to_string(i) + "]",
           "expected a non-negative integer, got " + short_json(d));
    if (d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      fail(where, field + ".shape[" + std::to_string(i) + "]", "dimension too large");
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

DType parse_dtype(const json& t, const std::string& where, const std::string& field) {
  auto it = t.find("dtype");
  if (it == t.end()) fail(where, field + ".dtype", "missing");
  if (!it->is_string()) fail(where, field + ".dtype", "expected a dtype name, got " + short_json(*it));
  auto d = dtype_from_name(it->get<std::string>());
  if (!d) fail(where, field + ".dtype", "unknown dtype '" + it->get<std::string>() + "'");
  return *d;
}

const json& tensor_object(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(where, key, "missing");
  if (!it->is_object()) fail(where, key, "expected an object with shape and dtype");
  return *it;
}

int64_t checked_count(const std::vector<int64_t>& shape) { return num_elements(shape); }

// A float element: a number, or one of the strings NaN / Infinity / -Infinity
// (JSON has no literal for them; poisoning tests need them).
std::optional<double> float_element(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (auto f = marked_float(v)) return f;
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "-NaN" || s == "-nan") return -std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

void parse_float_tensor(const json& obj, const char* key, const std::string& where, const std::string& base_dir,
                        ArrayArg& arg, TensorContent& content) {
  const json& t = tensor_object(obj, key, where);
  const std::string field = key;
  arg.shape = parse_shape(t, where, field);
  arg.dtype = parse_dtype(t, where, field);
  const int64_t count = checked_count(arg.shape);
  auto data = t.find("data");
  auto npy = t.find("npy");
  auto seed = t.find("data_seed");
  const int given = (data != t.end() && !data->is_null()) + (npy != t.end() && !npy->is_null()) +
                    (seed != t.end() && !seed->is_null());
  if (given > 1) fail(where, field, "give at most one of data, npy, data_seed");
  if (given == 0) return;
  const bool numeric_dtype = dtype_info(arg.dtype).computable;
  if (seed != t.end() && !seed->is_null()) {
    if (!seed->is_number_unsigned()) fail(where, field + ".data_seed", "expected a non-negative integer");
    if (!numeric_dtype) fail(where, field + ".dtype", "data_seed needs a q/KV dtype, not " + std::string(dtype_name(arg.dtype)));
    content.source = ContentSource::kSeed;
    content.seed = seed->get<uint64_t>();
    return;
  }
  if (!numeric_dtype) fail(where, field + ".dtype", "contents need a q/KV dtype, not " + std::string(dtype_name(arg.dtype)));
  std::string path;
  if (npy != t.end() && !npy->is_null()) {
    if (!npy->is_string()) fail(where, field + ".npy", "expected a path");
    path = npy->get<std::string>();
  } else if (data->is_string()) {
    path = data->get<std::string>();
  }
  if (!path.empty()) {
    content.source = ContentSource::kNpy;
    content.npy_path = path;
    const std::string full = (path.front() == '/' || base_dir.empty()) ? path : base_dir + "/" + path;
    if (count > kMaxMaterialisedElements) fail(where, field + ".shape", "too large to load (" + std::to_string(count) + " elements)");
    NpyArray a;
    try {
      a = read_npy(full);
    } catch (const CaseError& e) {
      fail(where, field + ".npy", e.what());
    }
    if (a.shape != arg.shape) fail(where, field + ".npy", "shape of " + path + " differs from the case's shape");
    content.values = npy_to_values(a, arg.dtype, where + ": field '" + field + ".npy'");
    return;
  }
  if (!data->is_array()) fail(where, field + ".data", "expected an array of numbers or a .npy path");
  if (int64_t(data->size()) != count)
    fail(where, field + ".data", "has " + std::to_string(data->size()) + " values but the shape holds " +
                                     std::to_string(count));
  content.source = ContentSource::kData;
  content.values.resize(data->size());
  for (size_t i = 0; i < data->size(); ++i) {
    auto x = float_element((*data)[i]);
    const std::string f = field + ".data[" + std::to_string(i) + "]";
    if (!x) fail(where, f, "expected a number, got " + short_json((*data)[i]));
    if (!representable(arg.dtype, *x))
      fail(where, f, "value " + short_json((*data)[i]) + " is not exactly representable in " +
                         std::string(dtype_name(arg.dtype)));
    content.values[i] = static_cast<float>(*x);
  }
}

bool int_fits(DType d, const BigInt& v) {
  const auto& info = dtype_info(d);
  if (info.kind == DTypeKind::kBool) return v == 0 || v == 1;
  if (info.kind == DTypeKind::kSignedInt) {
    const BigInt lo = -(BigInt(1) << (info.bits - 1)), hi = (BigInt(1) << (info.bits - 1)) - 1;
    return v >= lo && v <= hi;
  }
  if (info.kind == DTypeKind::kUnsignedInt) return v >= 0 && v < (BigInt(1) << info.bits);
  // Float dtypes: integral values within the float's exact range only.
  return v >= -(BigInt(1) << 24) && v <= (BigInt(1) << 24);
}

void parse_index_tensor(const json& obj, const char* key, const std::string& where, IndexArg& arg) {
  const json& t = tensor_object(obj, key, where);
  const std::string field = key;
  arg.shape = parse_shape(t, where, field);
  arg.dtype = parse_dtype(t, where, field);
  auto data = t.find("data");
  if (data == t.end() || data->is_null()) return;
  if (!data->is_array()) fail(where, field + ".data", "expected an array of integers");
  const int64_t count = checked_count(arg.shape);
  if (int64_t(data->size()) != count)
    fail(where, field + ".data", "has " + std::to_string(data->size()) + " values but the shape holds " +
                                     std::to_string(count));
  arg.has_data = true;
  arg.data.resize(data->size());
  for (size_t i = 0; i < data->size(); ++i) {
    const json& v = (*data)[i];
    const std::string f = field + ".data[" + std::to_string(i) + "]";
    BigInt b;
    if (v.is_number_integer() || is_big_int(v)) {
      b = big_int_of(v);
    } else if (v.is_boolean() && dtype_info(arg.dtype).kind == DTypeKind::kBool) {
      b = v.get<bool>() ? 1 : 0;
    } else if (v.is_number_float() && std::trunc(v.get<double>()) == v.get<double>() &&
               dtype_info(arg.dtype).kind == DTypeKind::kFloat) {
      b = BigInt(static_cast<int64_t>(v.get<double>()));
    } else {
      fail(where, f, "expected an integer, got " + short_json(v));
    }
    if (!int_fits(arg.dtype, b))
      fail(where, f, "value " + short_json(v) + " is not representable in " + std::string(dtype_name(arg.dtype)));
    arg.data[i] = static_cast<int64_t>(b);
  }
}

json float_tensor_json(const ArrayArg& a, const TensorContent& c) {
  json t = {{"shape", a.shape}, {"dtype", dtype_name(a.dtype)}};
  switch (c.source) {
    case ContentSource::kSeed: t["data_seed"] = c.seed; break;
    case ContentSource::kData:
    case ContentSource::kNpy: {
      json d = json::array();
      for (float v : c.values) {
        if (std::isnan(v)) d.push_back(std::signbit(v) ? "-NaN" : "NaN");
        else if (std::isinf(v)) d.push_back(v > 0 ? "Infinity" : "-Infinity");
        else d.push_back(double(v));
      }
      t["data"] = std::move(d);
      break;
    }
    case ContentSource::kNone: break;
  }
  return t;
}

json index_tensor_json(const IndexArg& a) {
  json t = {{"shape", a.shape}, {"dtype", dtype_name(a.dtype)}};
  if (a.has_data) t["data"] = a.data;
  return t;
}

// Values JSON cannot hold (ints beyond 64 bits, NaN and infinities) are
// written as marked strings that unmark_json turns into Python's literals.
json option_json(const PyValue& v) {
  switch (v.kind) {
    case PyValue::Kind::kNone: return nullptr;
    case PyValue::Kind::kBool: return v.b;
    case PyValue::Kind::kInt:
      if (v.i >= std::numeric_limits<int64_t>::min() && v.i <= std::numeric_limits<int64_t>::max())
        return static_cast<int64_t>(v.i);
      return std::string(kBigIntMarker) + v.i.str();
    case PyValue::Kind::kFloat:
      if (std::isnan(v.f)) return std::string(kFloatMarker) + "nan";
      if (std::isinf(v.f)) return std::string(kFloatMarker) + (v.f > 0 ? "inf" : "-inf");
      return v.f;
  }
  return nullptr;
}

std::string unmark_json(std::string text) {
  static const std::pair<std::string, std::string> kTokens[] = {
      {"\"\\u0001float:nan\"", "NaN"}, {"\"\\u0001float:inf\"", "Infinity"}, {"\"\\u0001float:-inf\"", "-Infinity"}};
  for (const auto& [from, to] : kTokens)
    for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p)) text.replace(p, from.size(), to);
  const std::string big = "\"\\u0001bigint:";
  for (size_t p = text.find(big); p != std::string::npos; p = text.find(big, p)) {
    const size_t end = text.find('"', p + big.size());
    text = text.substr(0, p) + text.substr(p + big.size(), end - p - big.size()) + text.substr(end + 1);
  }
  return text;
}

std::string dir_of(const std::string& path) {
  auto pos = path.find_last_of('/');
  return pos == std::string::npos ? std::string(".") : path.substr(0, pos);
}

}  // namespace

std::string_view entry_name(Entry e) { return kEntryNames[static_cast<int>(e)]; }

Case parse_case(std::string_view text, const std::string& where, const std::string& base_dir) {
  json obj;
  try {
    obj = parse_json_exact(text);
  } catch (const std::invalid_argument& e) {
    throw CaseError(where + ": invalid JSON: " + e.what());
  }
  if (!obj.is_object()) throw CaseError(where + ": expected a JSON object (one case)");
  Case c;
  c.where = where;
  if (auto it = obj.find("id"); it != obj.end() && !it->is_null()) {
    if (it->is_string()) c.id = it->get<std::string>();
    else if (it->is_number_integer()) c.id = it->dump();
    else fail(where, "id", "expected a string");
  } else {
    c.id = where;
  }
  auto entry = obj.find("entry");
  if (entry == obj.end()) fail(where, "entry", "missing (one of static, dynamic, kernel, reference)");
  if (!entry->is_string()) fail(where, "entry", "expected a string");
  bool found = false;
  for (int i = 0; i < 4; ++i)
    if (entry->get<std::string>() == kEntryNames[i]) c.entry = static_cast<Entry>(i), found = true;
  if (!found) fail(where, "entry", "unknown entry '" + entry->get<std::string>() + "' (one of static, dynamic, kernel, reference)");

  CallArgs& a = c.call;
  parse_float_tensor(obj, "q", where, base_dir, a.q, c.q_content);
  parse_float_tensor(obj, "kv_pages", where, base_dir, a.kv_pages, c.kv_content);
  parse_index_tensor(obj, "kv_lens", where, a.kv_lens);
  parse_index_tensor(obj, "page_indices", where, a.page_indices);
  parse_index_tensor(obj, "cu_q_lens", where, a.cu_q_lens);
  parse_index_tensor(obj, "num_seqs", where, a.num_seqs);
  a.sm_scale = parse_option(obj, "sm_scale", where);
  a.sliding_window = parse_option(obj, "sliding_window", where);
  a.soft_cap = parse_option(obj, "soft_cap", where);
  a.mask_value = parse_option(obj, "mask_value", where);
  a.k_scale = parse_option(obj, "k_scale", where);
  a.v_scale = parse_option(obj, "v_scale", where);
  a.num_kv_pages_per_block = parse_option(obj, "num_kv_pages_per_block", where);
  a.num_queries_per_block = parse_option(obj, "num_queries_per_block", where);
  a.vmem_limit_bytes = parse_option(obj, "vmem_limit_bytes", where);
  if (auto it = obj.find("device_kind"); it != obj.end() && !it->is_null()) {
    if (!it->is_string()) fail(where, "device_kind", "expected a string");
    a.device_kind = it->get<std::string>();
  }
  return c;
}

std::vector<Case> read_cases(const std::string& path) {
  std::string text;
  std::string name = path == "-" ? "<stdin>" : path;
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw CaseError(path + ": cannot open file");
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  const std::string base = path == "-" ? "." : dir_of(path);
  std::vector<Case> cases;
  // A .json file holds one object that may span lines.
  if (path.size() > 5 && path.ends_with(".json")) {
    cases.push_back(parse_case(text, name + ":1", base));
    return cases;
  }
  size_t start = 0;
  int line = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ++line;
    std::string_view l(text.data() + start, end - start);
    if (l.find_first_not_of(" \t\r") != std::string_view::npos)
      cases.push_back(parse_case(l, name + ":" + std::to_string(line), base));
    start = end + 1;
  }
  return cases;
}

std::string write_case(const Case& c) {
  const CallArgs& a = c.call;
  json o = {{"id", c.id}, {"entry", entry_name(c.entry)}};
  o["q"] = float_tensor_json(a.q, c.q_content);
  o["kv_pages"] = float_tensor_json(a.kv_pages, c.kv_content);
  o["kv_lens"] = index_tensor_json(a.kv_lens);
  o["page_indices"] = index_tensor_json(a.page_indices);
  o["cu_q_lens"] = index_tensor_json(a.cu_q_lens);
  o["num_seqs"] = index_tensor_json(a.num_seqs);
  o["sm_scale"] = option_json(a.sm_scale);
  o["sliding_window"] = option_json(a.sliding_window);
  o["soft_cap"] = option_json(a.soft_cap);
  o["mask_value"] = option_json(a.mask_value);
  o["k_scale"] = option_json(a.k_scale);
  o["v_scale"] = option_json(a.v_scale);
  o["num_kv_pages_per_block"] = option_json(a.num_kv_pages_per_block);
  o["num_queries_per_block"] = option_json(a.num_queries_per_block);
  o["vmem_limit_bytes"] = option_json(a.vmem_limit_bytes);
  o["device_kind"] = a.device_kind ? json(*a.device_kind) : json(nullptr);
  return unmark_json(o.dump());
}

namespace {
std::vector<float> materialise(const ArrayArg& a, const TensorContent& c, const std::string& where,
                               const char* field) {
  const int64_t n = checked_count(a.shape);
  if (c.source == ContentSource::kNone) fail(where, field, "has no contents (give data, npy or data_seed)");
  if (n > kMaxMaterialisedElements)
    fail(where, std::string(field) + ".shape", "too large to materialise (" + std::to_string(n) + " elements)");
  if (c.source == ContentSource::kSeed) return seeded_values(a.dtype, c.seed, n);
  return c.values;
}
}  // namespace

std::vector<float> materialise_q(const Case& c) { return materialise(c.call.q, c.q_content, c.where, "q"); }
std::vector<float> materialise_kv(const Case& c) {
  return materialise(c.call.kv_pages, c.kv_content, c.where, "kv_pages");
}

}  // namespace rpa
