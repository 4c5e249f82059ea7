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

// Parses one JSON document; on error throws std::invalid_argument whose
// message says where (byte offset and line within `text`).
nlohmann::json parse_json_exact(std::string_view text);

}  // namespace rpa
