// The tolerance model (docs/tolerance.md): per-element error in ulps against a truth, acceptance bounds, summaries.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "oracle/dtype.h"

namespace rpa {

// The float32 floor of every bound: 1e-5 * (1 + max |truth|), the part of
// the error that float32 arithmetic of scores and softmax can contribute.
inline constexpr double kFloat32Tolerance = 1e-5;
// An implementation is flagged when its largest error exceeds this factor
// times the reference's own largest error on the same case (and this floor).
inline constexpr double kFarWorseFactor = 16;
inline constexpr double kFarWorseFloorUlps = 2;
// When bounds are known the comparison is of |error| / bound instead, and an
// implementation using under this share of its bound is never flagged.
inline constexpr double kFarWorseFloorRatio = 0.125;
// Where the reference's own float32 result uses more than this share of the
// kernel bound from the exact truth, a kernel is judged against the nearer
// of the two (kernel_judging_truth). Not 1: an output one float32 ulp from
// a reference at 0.9996 of the bound failed it while the reference passed
// (`rpa conform --shapes large --cases 1000 --seed 500000`, gen-large-500861,
// the tiled emulation at 1.0025).
inline constexpr double kReferenceOffShare = 0.5;

// The dtype whose ulps judge an output element: the coarser (larger unit
// roundoff) of q's dtype and V's after dequantisation (q's with v_scale,
// else kv's); an integer V dtype without scale (probabilities truncated to
// integers, outputs integers) is its own judge.
DType judging_dtype(DType q, DType kv, bool has_v_scale);

// The largest unit roundoff on a (q, kv) pair's path: q's, K's and V's after
// dequantisation, and float32's; 0.5 for an integer V dtype without scale,
// whose cast of the probabilities truncates them.
double path_unit_roundoff(DType q, DType kv, bool has_k_scale, bool has_v_scale);

// |actual - truth| in ulps of `judge` at the truth (oracle/exact_round.h ulp_at).
double error_ulps(DType judge, double actual, double truth);

// 1e-5 * (1 + max |truth|) over the finite truth values.
double float32_floor(std::span<const double> truth);

// The reference's acceptance bound per element, against the rounded truth
// (oracle/truth.h): for a float32 judge the float32 floor; otherwise one
// ulp of the judge at the truth, and where some probabilities lie near a
// rounding boundary of their cast to V's dtype (widen > 0, from the truth)
// that shift plus one more ulp for the rounding of the shifted sum.
std::vector<double> reference_bound(DType judge, std::span<const double> truth, std::span<const double> widen);

// The bound for implementations with their own rounding points (the tiled
// emulation, the fast kernel, ports), against the rounded truth:
//   2u * (max |V| over the keys the row attends + |truth|) + float32 floor,
// u = path_unit_roundoff: the probabilities may carry a relative error of u
// each (an online softmax rounds them differently), which moves p.v by at
// most u * max|V|, and the output rounding adds u * |truth|; the factor 2
// covers the rounded truth's own roundings.
std::vector<double> kernel_bound(double u, std::span<const double> truth, std::span<const double> v_abs_max);

struct ErrorSummary {
  int64_t elements = 0;        // positions compared
  int64_t finite = 0;          // both values finite
  int64_t nan_mismatches = 0;  // NaN in exactly one of the two
  int64_t inf_mismatches = 0;  // an infinity not matched by the same infinity
  int64_t over_bound = 0;      // finite errors beyond their bound
  double max_ulps = 0, p99_ulps = 0, mean_ulps = 0;  // over finite positions
  double max_abs = 0;
  double max_bound_ratio = 0;  // max |error| / bound
  int64_t worst = -1;          // position of max_ulps (-1: none)
  int64_t first_mismatch = -1;  // first NaN / Inf position mismatch
  // Non-finite outputs accepted because the reference's own float32
  // arithmetic is non-finite there too (`reference_nonfinite` below).
  int64_t reference_nonfinite = 0;
  bool pass = true;            // no mismatches and nothing over its bound
};

// Compares `actual` with `truth` element by element; `bound` (empty: none)
// holds each element's allowed |error|. NaN and Inf must agree in position
// (and Inf in sign); two NaNs agree.
// `reference` (empty: none) is the rounded truth, the reference's own
// rounding points: where it is NaN or Inf while the exact truth is not (a
// float32 score or p.v sum past 3.4e38, a weight rounded to 0 against an
// infinite V), any NaN or Inf output is accepted there as well as the
// exact truth's value (docs/tolerance.md, "Reference overflow"). Finite
// outputs are judged against the truth as everywhere else.
// The truth a kernel's output is judged against: the exact truth, except
// on elements where the reference itself is off it, which take whichever
// of the exact and the rounded truth is nearer to `actual`:
//  * where the reference's own float32 q.k overflowed or its scores are
//    too large for float32 to resolve (TruthOutput::scores_off_exact of
//    the rounded truth): there its semantics, not its rounding, left the
//    exact truth, and a kernel may follow either. A NaN is accepted there
//    too: the reference's float32 softmax of those scores is NaN
//    (Inf - Inf), which only its cast of the probabilities to an integer V
//    dtype turns into 0 (docs/tolerance.md, "Reference overflow");
//  * where the rounded truth is farther from the exact truth than
//    kReferenceOffShare of `exact_bound` (the kernel bound at the exact
//    truth; empty: none): the reference's float32 arithmetic, which a
//    kernel shares, uses that much of the kernel bound, or fails it, there
//    itself (close float32 scores of a few hundred weighing far-apart V
//    rows; docs/tolerance.md, "Ill-conditioned rows").
// `from_rounded` (if given) receives how many elements took the rounded truth.
std::vector<double> kernel_judging_truth(std::span<const double> actual, std::span<const double> exact,
                                         std::span<const double> rounded, std::span<const char> scores_off_exact,
                                         std::span<const double> exact_bound, int64_t* from_rounded = nullptr);

// How a kernel's output is judged, in one place for `rpa conform` and
// `rpa compare --bound kernel`: the truth from kernel_judging_truth (with
// the kernel bound at the exact truth deciding where the reference itself
// is beyond it), and the kernel bound at that truth. `u`:
// path_unit_roundoff; `rounded`, `scores_off_exact`: of the rounded truth;
// `v_abs_max`: max |V| over each element's keys.
struct KernelJudgement {
  std::vector<double> truth, bound;
  int64_t from_rounded = 0;  // elements that took the rounded truth
};
KernelJudgement kernel_judgement(double u, std::span<const double> actual, std::span<const double> exact,
                                 std::span<const double> rounded, std::span<const char> scores_off_exact,
                                 std::span<const double> v_abs_max);

// The literal check of an outside certifier (issue #7, docs/tolerance.md
// "The plain bound"): max |actual - exact| / kernel_bound(u, exact,
// v_abs_max) over the elements, with no rounded truth anywhere - what
// kernel_judgement relaxes where the reference itself is off the exact
// truth. Infinity where `actual` is NaN or Inf and the exact truth is
// finite, or the two disagree in non-finite kind; elements where both are
// the same non-finite value count 0.
double plain_bound_share(double u, std::span<const double> actual, std::span<const double> exact,
                         std::span<const double> v_abs_max);

ErrorSummary summarize_errors(std::span<const float> actual, std::span<const double> truth, DType judge,
                              std::span<const double> bound, std::span<const double> reference = {});
ErrorSummary summarize_errors(std::span<const double> actual, std::span<const double> truth, DType judge,
                              std::span<const double> bound, std::span<const double> reference = {});

// True when `impl`'s largest error is far above the reference's own
// (kFarWorseFactor times it, and above kFarWorseFloorUlps; in units of the
// bound when the summaries have one, above kFarWorseFloorRatio), or it has
// NaN/Inf mismatches the reference has not.
bool far_worse_than_reference(const ErrorSummary& impl, const ErrorSummary& reference);

// One JSON object / a few human-readable lines.
std::string summary_json(const ErrorSummary& s, DType judge);
std::string summary_text(const ErrorSummary& s, DType judge);

}  // namespace rpa
