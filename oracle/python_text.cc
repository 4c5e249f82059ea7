// Unicode whitespace and decimal-digit tables of Python 3.11 (Unicode 14.0), for parsing device kinds as re does.
#include "oracle/python_text.h"

#include <algorithm>
#include <array>

namespace rpa {
namespace {

// Data: every code point c with chr(c).isspace() in Python 3.11.7
// (unicodedata.unidata_version 14.0.0); re's \s matches exactly these.
constexpr std::array<char32_t, 29> kSpaces{
    0x9,    0xa,    0xb,    0xc,    0xd,    0x1c,   0x1d,   0x1e,   0x1f,   0x20,
    0x85,   0xa0,   0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
    0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000};

// Data: the first code point (digit zero) of each run of ten consecutive
// Nd characters in Unicode 14.0 (all 660 Nd code points fall in these 66
// runs, each holding the values 0..9 in order).
constexpr std::array<char32_t, 66> kDigitZeros{
    0x30,    0x660,   0x6f0,   0x7c0,   0x966,   0x9e6,   0xa66,   0xae6,   0xb66,   0xbe6,   0xc66,
    0xce6,   0xd66,   0xde6,   0xe50,   0xed0,   0xf20,   0x1040,  0x1090,  0x17e0,  0x1810,  0x1946,
    0x19d0,  0x1a80,  0x1a90,  0x1b50,  0x1bb0,  0x1c40,  0x1c50,  0xa620,  0xa8d0,  0xa900,  0xa9d0,
    0xa9f0,  0xaa50,  0xabf0,  0xff10,  0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0,
    0x11450, 0x114d0, 0x11650, 0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60,
    0x16ac0, 0x16b50, 0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0};

constexpr char32_t kReplacement = 0xFFFD;

}  // namespace

CodePoint decode_utf8(std::string_view s, size_t pos) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) return {b0, 1};
  size_t n = 0;
  char32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0) n = 2, cp = b0 & 0x1F;
  else if ((b0 & 0xF0) == 0xE0) n = 3, cp = b0 & 0x0F;
  else if ((b0 & 0xF8) == 0xF0) n = 4, cp = b0 & 0x07;
  else return {kReplacement, 1};
  if (pos + n > s.size()) return {kReplacement, 1};
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[pos + k]);
    if ((b & 0xC0) != 0x80) return {kReplacement, 1};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, n};
}

bool py_isspace(char32_t cp) { return std::binary_search(kSpaces.begin(), kSpaces.end(), cp); }

int py_decimal_value(char32_t cp) {
  // The last run starting at or before cp.
  auto it = std::upper_bound(kDigitZeros.begin(), kDigitZeros.end(), cp);
  if (it == kDigitZeros.begin()) return -1;
  const char32_t zero = *(it - 1);
  return cp - zero < 10 ? static_cast<int>(cp - zero) : -1;
}

}  // namespace rpa
