// An exact accumulator for sums of doubles and of products of doubles (a long fixed-point register).
#pragma once

#include <array>
#include <cstdint>

#include "oracle/dtype.h"

namespace rpa {

// Holds sum_i a_i * b_i exactly for any finite doubles: every product of
// two doubles is an integer of at most 106 bits times 2^e with
// -2148 <= e <= 1942, so a two's complement fixed-point register of radix
// 2^32 digits from 2^-2176 to 2^2144 holds any sum of up to 2^30 terms with
// no rounding at all (carries are propagated every 2^29 additions, so no
// int64 digit can overflow). NaN and infinities follow IEEE arithmetic:
// NaN, 0 * inf, or +inf with -inf give NaN; otherwise an infinity wins.
class ExactSum {
 public:
  ExactSum() { digits_.fill(0); }
  void clear();
  void add(double x);
  void add_product(double a, double b);

  bool is_nan() const { return nan_ || (pos_inf_ && neg_inf_); }
  bool is_inf() const { return !is_nan() && (pos_inf_ || neg_inf_); }
  bool is_zero() const;

  // The exact sum rounded once to `d` (round_binary's rules).
  double round_to(DType d) const;
  double to_double() const { return round_to_double(); }

  // The leading 64 bits of |sum|, its exponent and whether anything is left
  // below them: |sum| = mant * 2^exp2 + rest, 0 <= rest < 2^exp2. mant == 0
  // means the sum is exactly zero. Only for finite sums.
  struct Leading {
    bool negative = false;
    uint64_t mant = 0;
    int64_t exp2 = 0;
    bool sticky = false;
  };
  Leading leading() const;

  // The leading `count` radix-2^32 digits of |sum| (out[0] the highest,
  // nonzero unless the sum is zero), the binary exponent of the lowest
  // returned digit's bit 0, and whether anything nonzero lies below.
  // Returns false for a zero sum. Only for finite sums.
  bool top_digits(uint32_t* out, int count, bool& negative, int64_t& exp2, bool& sticky) const;

 private:
  static constexpr int kDigits = 136;
  static constexpr int64_t kMinExp = -2176;  // weight of digit 0's lowest bit
  double round_to_double() const;
  void add_scaled(uint64_t lo, uint64_t hi, bool negative, int64_t exp2);
  void add_chunk(int k, uint64_t chunk, bool negative);
  void normalize() const;

  mutable std::array<int64_t, kDigits> digits_;
  mutable int lo_ = kDigits, hi_ = -1;  // touched digit range
  mutable int64_t pending_ = 0;         // additions since the last carry pass
  bool nan_ = false, pos_inf_ = false, neg_inf_ = false;
};

}  // namespace rpa
