// The Python 3.11 str semantics device kinds need: Unicode whitespace (str.isspace, re's \s) and decimal digits (\d).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rpa {

// One code point decoded from UTF-8 at `pos`; `len` is how many bytes it
// took. Malformed bytes decode one at a time as U+FFFD (neither a space nor
// a digit, so they never match).
struct CodePoint {
  char32_t cp;
  size_t len;
};
CodePoint decode_utf8(std::string_view s, size_t pos);

// str.isspace() / re's \s on a str pattern (the same 29 code points in
// Python 3.11's Unicode 14.0 database).
bool py_isspace(char32_t cp);

// re's \d on a str pattern: Unicode category Nd. Returns the digit's
// decimal value (what int() reads), or -1.
int py_decimal_value(char32_t cp);

}  // namespace rpa
