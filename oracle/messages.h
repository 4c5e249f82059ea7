// Every exception the validation mirror raises: class, message template, and the upstream function and line.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace rpa {

// One entry per raise / assert site (and per Python or JAX internal error
// those sites can hit). The order is the table's order in docs/errors.md.
enum class Msg : uint8_t {
  kUnpackNotEnough,
  kUnpackTooMany,
  kAssertCombinedKvHeadsEven,
  kAssertKScaleFloat,
  kAssertVScaleFloat,
  kNumSeqsShape,
  kHeadDimMismatch,
  kKvLensShape,
  kCuQLensShape,
  kIndexDtypes,
  kIntegerModuloByZero,
  kHeadsNotDivisible,
  kSlidingWindowPositive,
  kSoftCapZero,
  kKvPagesPerBlockRange,
  kQueriesPerBlockPositive,
  kVmemLimitPositive,
  kNumSeqsTooLarge,
  kMaxOfEmpty,
  kPagesPerSeqTooSmall,
  kTotalQTokens,
  kQLenExceedsKvLen,
  kIndexerType,
  kTruthValueEmpty,
  kTruthValueAmbiguous,
  kNotTileable,
  kAssertMinHeadsCombinedEven,
  kAssertMinHeadsDivisible,
  kAssertQHeadsPerBlk,
  kIntegerDivisionByZero,
  kTpuVersionTooOld,
  kAssertTpuVersionMatch,
  kAssertNextPowerOf2Positive,
  kConcatenateEmpty,
  kOnlyIntegerScalarIndex,
};

struct MessageTemplate {
  Msg id;
  std::string_view key;       // stable name, used by docs and tests
  std::string_view cls;       // Python exception class
  // The message as upstream writes it: the f-string's text with its
  // placeholders, "{expr=}" (printed as "expr=" + repr) or "{expr}" (str).
  std::string_view text;
  std::string_view function;  // upstream function (or the Python/JAX internal)
  std::string_view source;    // file:line at jax-ml/jax cec06d116c (or CPython 3.11)
  std::string_view raised_at; // where our entries reach it (kernel.py lines)
};

std::span<const MessageTemplate> message_templates();
const MessageTemplate& message_template(Msg id);

// The message with the placeholders filled in order. For "{expr=}" pass the
// value's repr (the "expr=" prefix is added here); for "{expr}" its str.
std::string format_message(Msg id, std::initializer_list<std::string> values = {});

// Throws PyError(cls, format_message(id, values)).
[[noreturn]] void raise_py(Msg id, std::initializer_list<std::string> values = {});

}  // namespace rpa
