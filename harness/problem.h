// Turns a validated case into the plain-buffer rpa_problem that kernels and ports receive.
#pragma once

#include <cstdint>
#include <vector>

#include "harness/case.h"
#include "rpa/rpa.h"

namespace rpa {

// Owns the buffers `problem` points into; do not copy after taking pointers.
struct ProblemBuffers {
  rpa_problem problem{};
  std::vector<float> q, kv_pages;
  std::vector<int32_t> kv_lens, page_indices, cu_q_lens;
  ProblemBuffers() = default;
  ProblemBuffers(const ProblemBuffers&) = delete;
  ProblemBuffers& operator=(const ProblemBuffers&) = delete;
};

// Materialises q and kv_pages and converts the options the way the Python
// math sees them (Python floats rounded to float32 where they meet float32
// arrays; mask_value None -> DEFAULT_MASK_VALUE, kernel.py:32). Requires a
// case whose shapes passed static validation (ranks 3 / 4 / 1 / 2 / 1 / 1)
// and int32 index tensors with data; throws CaseError otherwise.
// `with_kv_pages` false leaves kv_pages empty and problem.kv_pages null, for
// a kernel that reads its own encoding of the pages (the bench's fast
// calls, once the pages are encoded): materialising them is a copy of up to
// hundreds of MB per call set-up.
void make_problem(const Case& c, ProblemBuffers& out, bool with_kv_pages = true);

// Rows of the reference's output: cu_q_lens[num_seqs], clamped as JAX's
// indexing does.
int64_t output_rows(const rpa_problem& p);

}  // namespace rpa
