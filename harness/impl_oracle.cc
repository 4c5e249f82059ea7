// Registers `--impl oracle`, `truth` and `truth-exact`: the reference attention and its high-precision truths.
#include <stdexcept>

#include "harness/impls.h"
#include "oracle/reference.h"
#include "oracle/truth.h"
#include "oracle/validate.h"

namespace rpa {
namespace {

// The reference validates before it reads any tensor (kernel.py:88-101),
// so a case whose shapes fail validation raises that error even when it
// carries no contents; a case the math cannot run is malformed (CaseError).
template <typename Run>
ImplOutput run_checked(const Case& c, Run run) {
  static_validate_reference_inputs(c.call);
  const std::vector<float> q = materialise_q(c), kv = materialise_kv(c);
  try {
    return run(q, kv);
  } catch (const std::invalid_argument& e) {
    throw CaseError((c.where.empty() ? c.id : c.where) + ": " + e.what());
  }
}

int threads_of(const ImplOptions& o) { return o.threads > 0 ? o.threads : 1; }

ImplOutput run_oracle(const Case& c, const ImplOptions& options) {
  return run_checked(c, [&](const std::vector<float>& q, const std::vector<float>& kv) {
    AttentionOutput r = ref_ragged_paged_attention(c.call, q, kv, threads_of(options));
    ImplOutput o;
    o.rows = r.rows, o.num_q_heads = r.num_q_heads, o.head_dim = r.head_dim;
    o.values = std::move(r.values);
    o.diagnostics = std::move(r.diagnostics);
    return o;
  });
}

ImplOutput run_truth(const Case& c, const ImplOptions& options, TruthMode mode) {
  return run_checked(c, [&](const std::vector<float>& q, const std::vector<float>& kv) {
    TruthOptions t;
    t.mode = mode;
    t.widen_window_ulps = 0;
    t.threads = threads_of(options);
    TruthOutput r = truth_ragged_paged_attention(c.call, q, kv, t);
    ImplOutput o;
    o.rows = r.rows, o.num_q_heads = r.num_q_heads, o.head_dim = r.head_dim;
    // Rounded: values of the output dtype, exact in float32. Exact: the
    // double value rounded to float32 for the .npy.
    o.values.assign(r.values.begin(), r.values.end());
    o.diagnostics = std::move(r.diagnostics);
    return o;
  });
}

const ImplRegistration kOracle("oracle",
                               "ref_ragged_paged_attention in float32 as JAX on a CPU computes it "
                               "(oracle/reference.h)",
                               run_oracle);
const ImplRegistration kTruth("truth",
                              "the reference's math exact between its rounding points, rounded once at each "
                              "(oracle/truth.h, rounded mode)",
                              [](const Case& c, const ImplOptions& o) { return run_truth(c, o, TruthMode::kRounded); });
const ImplRegistration kTruthExact("truth-exact",
                                   "the reference's math with no rounding after the dequantised inputs, to double "
                                   "(oracle/truth.h, exact mode)",
                                   [](const Case& c, const ImplOptions& o) {
                                     return run_truth(c, o, TruthMode::kExact);
                                   });

}  // namespace
}  // namespace rpa
