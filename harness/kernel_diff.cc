// The kernel_diff check behind harness/kernel_diff.h.
#include "harness/kernel_diff.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "harness/conform.h"
#include "harness/impls.h"

namespace rpa {

GenOptions kernel_diff_shapes() {
  GenOptions g;
  g.max_seqs = 3;
  g.max_q_len = 8;
  g.max_kv_len = 40;
  g.max_head_dim = 16;
  return g;
}

std::optional<DiffFailure> kernel_diff_failure(const Case& c) {
  static const std::vector<const ImplSpec*> impls = {find_implementation("oracle"), find_implementation("tiled"),
                                                     find_implementation("fast")};
  ImplOptions options;
  options.threads = 1;
  const auto verdicts = conform_case(c, impls, options);
  if (!verdicts) return std::nullopt;  // rejected by validation, as the reference would
  for (size_t i = 0; i < impls.size(); ++i) {
    const Verdict& v = (*verdicts)[i];
    if (!v.ok && !v.kernel_finding) return DiffFailure{impls[i]->name, v.detail};
  }
  // The fast kernel is held to the plain bound too wherever the oracle
  // meets it: an outside check that applies the bound literally would fail
  // it there and not the reference. (The tiled emulation overflows where
  // the Pallas kernel does, which the plain bound cannot allow for.)
  const Verdict& fast = verdicts->back();
  if (fast.plain_share > 1 && fast.oracle_within_plain())
    return DiffFailure{"fast", fmt::format("{:.3f} of the plain bound (the exact truth only) where the oracle is at "
                                           "{:.3f}",
                                           fast.plain_share, fast.reference_plain_share)};
  return std::nullopt;
}

Case kernel_diff_case(const uint8_t* data, size_t size) {
  return random_case_from_bytes(data, size, kernel_diff_shapes());
}

GenOptions kernel_diff_large_shapes() {
  GenOptions g = kernel_diff_shapes();
  g.max_kv_len = 80;  // five 16-key blocks of the AVX-512 decode item, three of its 32-key 8-bit blocks
  g.head_dims = {64, 128, 32, 48, 80, 136};
  return g;
}

Case kernel_diff_large_case(const uint8_t* data, size_t size) {
  return random_case_from_bytes(data, size, kernel_diff_large_shapes());
}

void kernel_diff_or_abort(const Case& c) {
  const auto failure = kernel_diff_failure(c);
  if (!failure) return;
  const char* dir = std::getenv("RPA_FUZZ_OUT");
  const std::string path =
      save_reproducer(dir && *dir ? dir : "kernel-diff-findings", c, failure->impl, failure->detail);
  std::fprintf(stderr, "kernel_diff: %s failed on %s: %s (saved %s)\n", failure->impl.c_str(), c.id.c_str(),
               failure->detail.c_str(), path.c_str());
  std::abort();
}

}  // namespace rpa
