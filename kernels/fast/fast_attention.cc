// The fast kernel's entry points: checks, plan, threads, and the C ABI wrapper.
#include "kernels/fast/fast_attention.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <stdexcept>

#include "hwy/targets.h"
#include "kernels/abi_dtype.h"
#include "kernels/fast/cpu_traits.h"
#include "kernels/fast/overflow_rows.h"
#include "kernels/fast/plan.h"
#include "kernels/fast/simd_attention.h"
#include "kernels/fast/thread_pool.h"

namespace rpa::fast {
namespace {

thread_local std::string t_message;

rpa_status fail(int32_t code, const char* cls, std::string message) {
  t_message = std::move(message);
  return rpa_status{code, cls, t_message.c_str()};
}

}  // namespace

const char* simd_target() { return simd_target_name(); }

std::vector<std::string> available_simd_targets() {
  std::vector<std::string> names;
  for (const int64_t t : hwy::SupportedAndGeneratedTargets()) names.emplace_back(hwy::TargetName(t));
  return names;
}

void limit_simd_target(std::string_view name) {
  const auto same = [&](const char* target) {
    return std::equal(name.begin(), name.end(), target, target + std::strlen(target),
                      [](char a, char b) { return std::toupper(uint8_t(a)) == std::toupper(uint8_t(b)); });
  };
  for (const int64_t t : hwy::SupportedAndGeneratedTargets())
    if (same(hwy::TargetName(t))) {
      hwy::SetSupportedTargetsForTest(t);
      return;
    }
  std::string list;
  for (const auto& n : available_simd_targets()) list += (list.empty() ? "" : ", ") + n;
  throw std::invalid_argument("SIMD target '" + std::string(name) + "' is not one this CPU and build run (" + list +
                              ")");
}

rpa_status attention(const rpa_problem& p, const NativeKv& kv, float* out, std::vector<std::string>* diagnostics,
                     const Options& options) {
  if (p.abi_version != RPA_ABI_VERSION)
    return fail(RPA_ERR_UNSUPPORTED, nullptr, "rpa_problem.abi_version " + std::to_string(p.abi_version) + " != " +
                                                  std::to_string(RPA_ABI_VERSION));
  if (p.num_tokens < 0 || p.num_q_heads < 0 || p.head_dim < 0 || p.total_num_pages < 0 || p.page_size <= 0 ||
      p.num_combined_kv_heads < 0 || p.max_num_seqs < 0 || p.pages_per_seq < 0)
    return fail(RPA_ERR_REJECTED, "ValueError", "negative dimension or page_size <= 0 in rpa_problem");
  if (kv.dtype != dtype_of(p.kv_dtype) || kv.total_num_pages != p.total_num_pages || kv.page_size != p.page_size ||
      kv.num_combined_kv_heads != p.num_combined_kv_heads || kv.head_dim != p.head_dim)
    return fail(RPA_ERR_INTERNAL, nullptr, "native KV cache does not match the problem's geometry");
  // kernel.py:101-104: assert num_combined_kv_heads % 2 == 0, and
  // num_q_heads % num_kv_heads == 0.
  if (p.num_combined_kv_heads % 2 != 0) return fail(RPA_ERR_REJECTED, "AssertionError", "");
  const int64_t num_kv_heads = p.num_combined_kv_heads / 2;
  if (num_kv_heads == 0) return fail(RPA_ERR_REJECTED, "ZeroDivisionError", "integer modulo by zero");
  if (p.num_q_heads % num_kv_heads != 0) return fail(RPA_ERR_REJECTED, "AssertionError", "");

  Plan plan;
  std::string error;
  KernelCtx paths;  // what the path choices read
  paths.q_dtype = dtype_of(p.q_dtype);
  paths.kv_dtype = dtype_of(p.kv_dtype);
  paths.has_k_scale = p.has_k_scale != 0;
  paths.has_v_scale = p.has_v_scale != 0;
  paths.head_dim = p.head_dim;
  switch (options.bf16_dot) {
    case Options::Bf16Dot::kAuto: paths.bf16_dot = bf16_dot_is_fast(); break;
    case Options::Bf16Dot::kOn: paths.bf16_dot = has_bf16_dot(); break;
    case Options::Bf16Dot::kOff: paths.bf16_dot = false; break;
  }
  PlanShape shape;
  shape.tile_rows = tile_rows(paths);
  shape.group_rows = group_rows();
  int threads = p.num_threads > 0 ? p.num_threads : ThreadPool::hardware_threads();
  shape.threads = threads;
  if (!make_plan(p, kv, shape, options.skip_masked_blocks, out, plan, error))
    return fail(RPA_ERR_UNSUPPORTED, nullptr, error);
  plan.ctx.bf16_dot = paths.bf16_dot;
  plan.ctx.bf16_item = options.bf16_decode_item && has_bf16_dot() && has_byte_permute();
  plan.ctx.decode_item = options.bf16_decode_item;
  std::atomic<bool> nonfinite_exact_scores{false};
  plan.ctx.nonfinite_exact_scores = &nonfinite_exact_scores;
  // Rows past the output are not written (as the TPU kernel leaves them):
  // clearing them would cost a pass over the whole q-sized buffer per call.
  threads = std::max(1, std::min<int>(threads, int(std::min<size_t>(plan.items.size(), 1024))));
  run_plan(plan, threads);
  merge_partials(plan);
  if (nonfinite_exact_scores.load()) {
    const int64_t n = recompute_nonfinite_rows(plan, p, threads);
    if (n > 0)
      plan.diagnostics.push_back("scores past float32's range: " + std::to_string(n) +
                                 " output rows recomputed with the softmax in double (the exact math's answer "
                                 "where the float32 reference's is NaN)");
  }
  if (diagnostics) *diagnostics = std::move(plan.diagnostics);
  return rpa_status{RPA_OK, nullptr, nullptr};
}

}  // namespace rpa::fast

extern "C" rpa_status rpa_fast_attention(const rpa_problem* p, float* out) {
  if (p == nullptr || out == nullptr) return rpa::fast::fail(RPA_ERR_INTERNAL, nullptr, "null problem or output");
  if (p->total_num_pages < 0 || p->page_size <= 0 || p->num_combined_kv_heads < 0 || p->head_dim < 0)
    return rpa::fast::fail(RPA_ERR_REJECTED, "ValueError", "negative dimension or page_size <= 0 in rpa_problem");
  const rpa::fast::NativeKv kv = rpa::fast::encode_kv(*p);
  return rpa::fast::attention(*p, kv, out, nullptr);
}
