// Bit patterns of the KV dtype for the packed-word emulation: a decode table, and an encoder fast for representable values.
#pragma once

#include <cstdint>
#include <vector>

#include "oracle/dtype.h"

namespace rpa::tiled {

// rpa::decode / rpa::encode (oracle/dtype.h) are the source of truth; this
// caches decode in a table (dtypes up to 16 bits) and encodes values that
// are already exact in the dtype (what rpa_problem guarantees) with bit
// arithmetic, checked against the table, falling back to rpa::encode.
class KvCodec {
 public:
  explicit KvCodec(DType d);
  DType dtype() const { return d_; }
  int bits() const { return bits_; }
  float decode(uint32_t bits) const;  // low bits() bits
  uint32_t encode(float x) const;

 private:
  uint32_t encode_exact_float(float x) const;  // 0xFFFFFFFF when not handled
  DType d_;
  int bits_;
  int man_bits_ = 0, exp_bits_ = 0, bias_ = 0;
  std::vector<float> table_;  // empty for 32-bit
};

}  // namespace rpa::tiled
