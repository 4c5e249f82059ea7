// NumPy .npy reading and atomic writing (format versions 1.0 and 2.0, little-endian, C order).
#include "harness/npy.h"

#include <unistd.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "harness/case.h"

namespace rpa {
namespace {

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw CaseError(path + ": not a readable .npy file: " + what);
}

// Pulls `'key': value` out of the header dict (numpy writes it with repr()).
std::string header_value(const std::string& h, const std::string& key, const std::string& path) {
  auto k = h.find("'" + key + "'");
  if (k == std::string::npos) bad(path, "header lacks '" + key + "'");
  auto colon = h.find(':', k);
  if (colon == std::string::npos) bad(path, "malformed header");
  size_t s = h.find_first_not_of(' ', colon + 1);
  if (s == std::string::npos) bad(path, "malformed header");
  if (h[s] == '\'') {
    auto e = h.find('\'', s + 1);
    if (e == std::string::npos) bad(path, "malformed header");
    return h.substr(s + 1, e - s - 1);
  }
  if (h[s] == '(') {
    auto e = h.find(')', s);
    if (e == std::string::npos) bad(path, "malformed header");
    return h.substr(s, e - s + 1);
  }
  auto e = h.find_first_of(",}", s);
  return h.substr(s, e - s);
}

size_t descr_size(const std::string& d) {
  if (d.size() < 3) return 0;
  return static_cast<size_t>(std::atoi(d.c_str() + 2));
}

std::string descr_for_bits(int bits) {
  switch (bits) {
    case 32: return "<u4";
    case 16: return "<u2";
    default: return "|u1";
  }
}

std::string shape_text(std::span<const int64_t> shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += std::to_string(shape[i]) + (shape.size() == 1 ? "," : (i + 1 < shape.size() ? ", " : ""));
  return s + ")";
}

std::string npy_bytes(const std::string& descr, std::span<const int64_t> shape, const void* data, size_t nbytes) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_text(shape) + ", }";
  // Pad so that magic + version + length + header is a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  out.push_back(char(len & 0xFF));
  out.push_back(char(len >> 8));
  out += header;
  out.append(static_cast<const char*>(data), nbytes);
  return out;
}

}  // namespace

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CaseError(path + ": cannot open .npy file");
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string b = ss.str();
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) bad(path, "missing magic");
  const int major = static_cast<unsigned char>(b[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<unsigned char>(b[8]) | (size_t(static_cast<unsigned char>(b[9])) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) bad(path, "truncated header");
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= size_t(static_cast<unsigned char>(b[8 + i])) << (8 * i);
    hstart = 12;
  } else {
    bad(path, "unsupported version " + std::to_string(major));
  }
  if (hstart + hlen > b.size()) bad(path, "truncated header");
  const std::string h = b.substr(hstart, hlen);
  NpyArray a;
  a.descr = header_value(h, "descr", path);
  if (header_value(h, "fortran_order", path) != "False") bad(path, "Fortran order is not supported");
  const std::string shape = header_value(h, "shape", path);
  for (size_t i = 1; i < shape.size();) {
    size_t j = shape.find_first_of(",)", i);
    std::string tok = shape.substr(i, j - i);
    tok.erase(0, tok.find_first_not_of(' '));
    if (!tok.empty()) {
      char* end = nullptr;
      long long v = std::strtoll(tok.c_str(), &end, 10);
      if (*end != '\0' || v < 0) bad(path, "bad shape " + shape);
      a.shape.push_back(v);
    }
    if (j == std::string::npos || shape[j] == ')') break;
    i = j + 1;
  }
  if (a.descr.size() < 3 || (a.descr[0] != '<' && a.descr[0] != '|')) bad(path, "unsupported dtype " + a.descr);
  const size_t item = descr_size(a.descr);
  const int64_t count = num_elements(a.shape);
  if (item == 0 || count > kMaxMaterialisedElements) bad(path, "unsupported dtype or too large");
  const size_t need = size_t(count) * item;
  if (b.size() - hstart - hlen < need) bad(path, "data shorter than its shape");
  a.bytes.assign(b.begin() + long(hstart + hlen), b.begin() + long(hstart + hlen + need));
  return a;
}

std::vector<float> npy_to_values(const NpyArray& a, DType dtype, const std::string& where) {
  const size_t item = descr_size(a.descr);
  const size_t n = item ? a.bytes.size() / item : 0;
  std::vector<float> out(n);
  const char kind = a.descr[1];
  const int bits = dtype_bits(dtype);
  auto raw = [&](size_t i) {
    uint32_t v = 0;
    std::memcpy(&v, a.bytes.data() + i * item, item);
    return v;
  };
  if (kind == 'f' && item == 4 && dtype == DType::kFloat32) {
    for (size_t i = 0; i < n; ++i) out[i] = std::bit_cast<float>(raw(i));
  } else if (kind == 'f' && item == 2 && dtype == DType::kFloat16) {
    for (size_t i = 0; i < n; ++i) out[i] = decode(dtype, raw(i));
  } else if (kind == 'i' && item == 1 && dtype == DType::kInt8) {
    for (size_t i = 0; i < n; ++i) out[i] = decode(dtype, raw(i));
  } else if (kind == 'u' && int(item) * 8 == (bits < 8 ? 8 : bits)) {
    for (size_t i = 0; i < n; ++i) {
      const uint32_t v = raw(i);
      if (bits < 8 && v >= (1u << bits))
        throw CaseError(where + ": element " + std::to_string(i) + " holds " + std::to_string(v) +
                        ", not a " + std::to_string(bits) + "-bit pattern");
      out[i] = decode(dtype, v);
    }
  } else {
    throw CaseError(where + ": array dtype " + a.descr + " cannot hold " + std::string(dtype_name(dtype)) +
                    " (give the dtype itself or same-width unsigned bit patterns)");
  }
  return out;
}

void write_file_atomic(const std::string& path, const std::string& contents) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp);
    out.write(contents.data(), std::streamsize(contents.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot write " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rename " + tmp + " to " + path);
  }
}

void write_npy_f32(const std::string& path, std::span<const int64_t> shape, std::span<const float> data) {
  write_file_atomic(path, npy_bytes("<f4", shape, data.data(), data.size() * sizeof(float)));
}

void write_npy_bits(const std::string& path, std::span<const int64_t> shape, DType dtype,
                    std::span<const uint32_t> bits) {
  const int width = dtype_bits(dtype) < 8 ? 8 : dtype_bits(dtype);
  std::string buf(bits.size() * size_t(width / 8), '\0');
  for (size_t i = 0; i < bits.size(); ++i) std::memcpy(buf.data() + i * size_t(width / 8), &bits[i], size_t(width / 8));
  write_file_atomic(path, npy_bytes(descr_for_bits(width), shape, buf.data(), buf.size()));
}

}  // namespace rpa
