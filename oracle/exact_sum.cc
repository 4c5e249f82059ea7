// The long fixed-point register behind ExactSum: integer mantissas placed at their binary exponent.
#include "oracle/exact_sum.h"

#include <bit>
#include <cmath>
#include <limits>

#include "oracle/exact_round.h"

namespace rpa {
namespace {

// |x| = m * 2^e with m an integer below 2^53 (finite, nonzero x).
void split_double(double x, uint64_t& m, int64_t& e) {
  int ex;
  const double f = std::frexp(std::fabs(x), &ex);
  m = static_cast<uint64_t>(std::ldexp(f, 53));
  e = ex - 53;
}

}  // namespace

void ExactSum::clear() {
  for (int k = lo_; k <= hi_; ++k) digits_[k] = 0;
  lo_ = kDigits, hi_ = -1, pending_ = 0;
  nan_ = pos_inf_ = neg_inf_ = false;
}

void ExactSum::add_chunk(int k, uint64_t chunk, bool negative) {
  if (chunk == 0) return;
  digits_[k] += negative ? -static_cast<int64_t>(chunk) : static_cast<int64_t>(chunk);
  if (k < lo_) lo_ = k;
  if (k > hi_) hi_ = k;
}

// Adds +-(hi * 2^64 + lo) * 2^exp2.
void ExactSum::add_scaled(uint64_t lo, uint64_t hi, bool negative, int64_t exp2) {
  const int64_t bit = exp2 - kMinExp;  // >= 0 for every product of doubles
  const int k = static_cast<int>(bit >> 5);
  const int s = static_cast<int>(bit & 31);
  // (hi:lo) << s spread over 32-bit chunks; hi < 2^42, so 6 chunks suffice.
  const unsigned __int128 low = static_cast<unsigned __int128>(lo) << s;   // < 2^95
  const unsigned __int128 high = static_cast<unsigned __int128>(hi) << s;  // < 2^73, weight 2^64
  add_chunk(k, static_cast<uint64_t>(low) & 0xFFFFFFFFu, negative);
  add_chunk(k + 1, static_cast<uint64_t>(low >> 32) & 0xFFFFFFFFu, negative);
  add_chunk(k + 2, static_cast<uint64_t>(low >> 64) & 0xFFFFFFFFu, negative);
  add_chunk(k + 2, static_cast<uint64_t>(high) & 0xFFFFFFFFu, negative);
  add_chunk(k + 3, static_cast<uint64_t>(high >> 32) & 0xFFFFFFFFu, negative);
  add_chunk(k + 4, static_cast<uint64_t>(high >> 64) & 0xFFFFFFFFu, negative);
  if (++pending_ >= (int64_t{1} << 29)) normalize();
}

void ExactSum::add(double x) {
  if (std::isnan(x)) { nan_ = true; return; }
  if (std::isinf(x)) { (x > 0 ? pos_inf_ : neg_inf_) = true; return; }
  if (x == 0) return;
  uint64_t m;
  int64_t e;
  split_double(x, m, e);
  add_scaled(m, 0, std::signbit(x), e);
}

void ExactSum::add_product(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) { nan_ = true; return; }
  if (std::isinf(a) || std::isinf(b)) {
    if (a == 0 || b == 0) { nan_ = true; return; }
    (std::signbit(a) != std::signbit(b) ? neg_inf_ : pos_inf_) = true;
    return;
  }
  if (a == 0 || b == 0) return;
  uint64_t ma, mb;
  int64_t ea, eb;
  split_double(a, ma, ea);
  split_double(b, mb, eb);
  const unsigned __int128 p = static_cast<unsigned __int128>(ma) * mb;  // < 2^106
  add_scaled(static_cast<uint64_t>(p), static_cast<uint64_t>(p >> 64), std::signbit(a) != std::signbit(b),
             ea + eb);
}

// Propagates carries so that every digit below the top one lies in
// [0, 2^32) and the top one in [-2^31, 2^31): the top digit then carries
// the sign of the whole sum.
void ExactSum::normalize() const {
  if (hi_ < lo_) return;
  for (int k = lo_; k < hi_; ++k) {
    const int64_t carry = digits_[k] >> 32;  // floor division (arithmetic shift)
    digits_[k] &= 0xFFFFFFFF;
    digits_[k + 1] += carry;
  }
  while (hi_ + 1 < kDigits && (digits_[hi_] >= (int64_t{1} << 31) || digits_[hi_] < -(int64_t{1} << 31))) {
    const int64_t carry = digits_[hi_] >> 32;
    digits_[hi_] &= 0xFFFFFFFF;
    digits_[++hi_] += carry;
  }
  while (hi_ >= lo_ && digits_[hi_] == 0) --hi_;
  while (lo_ <= hi_ && digits_[lo_] == 0) ++lo_;
  if (hi_ < lo_) lo_ = kDigits, hi_ = -1;
  pending_ = 0;
}

bool ExactSum::is_zero() const {
  normalize();
  return hi_ < lo_;
}

bool ExactSum::top_digits(uint32_t* out, int count, bool& negative, int64_t& exp2, bool& sticky) const {
  normalize();
  negative = false, exp2 = 0, sticky = false;
  if (hi_ < lo_) return false;
  negative = digits_[hi_] < 0;
  // |sum| as radix-2^32 digits: negate the two's complement number if needed.
  std::array<uint64_t, kDigits> mag{};
  int64_t borrow = 0;
  for (int k = lo_; k <= hi_; ++k) {
    if (!negative) {
      mag[k] = static_cast<uint64_t>(digits_[k]);
      continue;
    }
    int64_t v = -digits_[k] - borrow;
    if (k < hi_) {
      borrow = v < 0 ? 1 : 0;
      v += borrow << 32;
    }
    mag[k] = static_cast<uint64_t>(v);
  }
  int top = hi_;
  while (top >= lo_ && mag[top] == 0) --top;
  if (top < lo_) return false;
  for (int j = 0; j < count; ++j) {
    const int k = top - j;
    out[j] = k >= lo_ ? static_cast<uint32_t>(mag[k]) : 0u;
  }
  for (int k = lo_; k <= top - count; ++k) sticky |= mag[k] != 0;
  exp2 = 32 * int64_t(top - count + 1) + kMinExp;
  return true;
}

ExactSum::Leading ExactSum::leading() const {
  Leading r;
  uint32_t d[3];
  int64_t exp2;
  bool sticky;
  if (!top_digits(d, 3, r.negative, exp2, sticky)) return Leading{};
  // 96 bits with weight 2^exp2 at bit 0; keep the leading 64.
  const unsigned __int128 acc = (static_cast<unsigned __int128>(d[0]) << 64) |
                                (static_cast<unsigned __int128>(d[1]) << 32) | d[2];
  const int shift = 32 - std::countl_zero(d[0]);  // in [1, 32]
  sticky |= (acc & ((static_cast<unsigned __int128>(1) << shift) - 1)) != 0;
  r.mant = static_cast<uint64_t>(acc >> shift);
  r.exp2 = exp2 + shift;
  r.sticky = sticky;
  return r;
}

double ExactSum::round_to(DType d) const {
  if (is_nan()) return round_double_to(d, std::numeric_limits<double>::quiet_NaN());
  if (is_inf()) return round_double_to(d, pos_inf_ ? std::numeric_limits<double>::infinity()
                                                    : -std::numeric_limits<double>::infinity());
  const Leading l = leading();
  if (l.mant == 0) return round_double_to(d, 0.0);
  return round_binary(d, l.negative, l.mant, l.exp2, l.sticky);
}

double ExactSum::round_to_double() const {
  if (is_nan()) return std::numeric_limits<double>::quiet_NaN();
  if (is_inf()) return pos_inf_ ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  const Leading l = leading();
  if (l.mant == 0) return 0.0;
  return round_binary_to_double(l.negative, l.mant, l.exp2, l.sticky);
}

}  // namespace rpa
