// A SAX front end for nlohmann::json that keeps oversized integer literals exact.
#include "harness/json_reader.h"

#include <stdexcept>

namespace rpa {
namespace {

using json = nlohmann::json;

// Builds the DOM as nlohmann does, except for number_float events whose
// text has no '.', 'e' or 'E': those are integers that overflowed 64 bits.
class ExactSax : public nlohmann::detail::json_sax_dom_parser<json> {
 public:
  explicit ExactSax(json& root) : json_sax_dom_parser(root, false) {}
  bool number_float(json::number_float_t v, const json::string_t& text) {
    if (text.find_first_of(".eE") == json::string_t::npos) {
      json::string_t marked(kBigIntMarker);
      marked += text;
      return json_sax_dom_parser::string(marked);
    }
    return json_sax_dom_parser::number_float(v, text);
  }
  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception& ex) {
    error_position = position;
    error_message = ex.what();
    (void)last_token;
    return false;
  }
  std::size_t error_position = 0;
  std::string error_message;
};

// Rewrites the bare tokens NaN, Infinity and -Infinity (outside string
// literals) as marked strings; returns `text` untouched when there are none.
std::string_view with_float_tokens_marked(std::string_view text, std::string& buffer) {
  if (text.find("NaN") == std::string_view::npos && text.find("Infinity") == std::string_view::npos) return text;
  buffer.clear();
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      buffer.push_back(ch);
      if (ch == '\\' && i + 1 < text.size()) buffer.push_back(text[++i]);
      else if (ch == '"') in_string = false;
      continue;
    }
    if (ch == '"') {
      in_string = true;
      buffer.push_back(ch);
      continue;
    }
    const std::string_view rest = text.substr(i);
    const char* value = nullptr;
    size_t len = 0;
    if (rest.starts_with("NaN")) value = "nan", len = 3;
    else if (rest.starts_with("Infinity")) value = "inf", len = 8;
    else if (rest.starts_with("-Infinity")) value = "-inf", len = 9;
    if (value) {
      buffer += '"';
      buffer += "\\u0001float:";
      buffer += value;
      buffer += '"';
      i += len - 1;
    } else {
      buffer.push_back(ch);
    }
  }
  return buffer;
}

}  // namespace

json parse_json_exact(std::string_view raw) {
  std::string buffer;
  const std::string_view text = with_float_tokens_marked(raw, buffer);
  json root;
  ExactSax sax(root);
  const bool ok = json::sax_parse(text.begin(), text.end(), &sax, nlohmann::detail::input_format_t::json, true);
  if (!ok || sax.is_errored()) {
    std::string msg = sax.error_message.empty() ? "invalid JSON" : sax.error_message;
    // nlohmann's messages start with "[json.exception.parse_error.101] ";
    // keep only the human part.
    if (auto pos = msg.find("] "); pos != std::string::npos) msg = msg.substr(pos + 2);
    throw std::invalid_argument(msg);
  }
  return root;
}

}  // namespace rpa
