// JSON parsing that keeps what Python would see: integers of any size stay integers (never doubles).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace rpa {

// nlohmann turns an integer literal too large for 64 bits into a double;
// Python keeps it an int. Such literals are stored as a string prefixed
// with kBigIntMarker so that the case reader can rebuild the exact int.
inline constexpr std::string_view kBigIntMarker = "\x01" "bigint:";

// Python's json module writes the non-finite floats as the bare tokens
// NaN, Infinity and -Infinity, which JSON lacks. They are read as strings
// holding kFloatMarker followed by "nan", "inf" or "-inf".
inline constexpr std::string_view kFloatMarker = "\x01" "float:";

// Parses one JSON document; on error throws std::invalid_argument whose
// message says where (byte offset and line within `text`).
nlohmann::json parse_json_exact(std::string_view text);

}  // namespace rpa
