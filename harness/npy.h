// Reading and writing NumPy .npy files (format 1.0/2.0, little-endian, C order).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "oracle/dtype.h"

namespace rpa {

struct NpyArray {
  std::string descr;  // e.g. "<f4", "<u2", "|u1", "<i4"
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // raw little-endian C-order data
};

// Throws CaseError naming the file on any malformed or unsupported input.
NpyArray read_npy(const std::string& path);

// Values of `dtype` widened to float, from an array holding either that
// dtype itself (float32/float16 as "<f4"/"<f2", int8 as "|i1") or
// same-width unsigned integers holding its bit patterns ("<u2" for
// bfloat16/float16, "|u1" for 8-bit and int4 one value a byte).
std::vector<float> npy_to_values(const NpyArray& a, DType dtype, const std::string& where);

// Atomic writes (temporary file in the same folder, then rename).
void write_npy_f32(const std::string& path, std::span<const int64_t> shape, std::span<const float> data);
// Raw bit patterns of `dtype` as same-width unsigned integers (int4: one a byte).
void write_npy_bits(const std::string& path, std::span<const int64_t> shape, DType dtype,
                    std::span<const uint32_t> bits);

// Writes `contents` to `path` atomically.
void write_file_atomic(const std::string& path, const std::string& contents);

}  // namespace rpa
