// The grid walk of the tiled emulation: head blocks outer, q blocks inner, the sequence and KV-block loops of each step.
#include "kernels/tiled/tiled_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/tiled/tiled_codec.h"
#include "kernels/tiled/tiled_dma.h"
#include "kernels/tiled/tiled_flash.h"
#include "kernels/tiled/tiled_geometry.h"
#include "kernels/tiled/tiled_pool.h"
#include "kernels/tiled/tiled_prefetch.h"
#include "kernels/tiled/tiled_scalars.h"
#include "kernels/tiled/tiled_unpack.h"

namespace rpa::tiled {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

TiledResult fail(int32_t code, std::string cls, std::string msg) { return {code, std::move(cls), std::move(msg)}; }

// The assertions the kernel body makes while it is traced, in trace order
// (compute_with_kv_blk_in_cur_seq: fold_on_2nd_minor, then flash_attention's
// dtype check, then broadcast_to_shape). Each either raises (strict) or is
// named and stepped over. Returns true when one raised.
bool trace_asserts(const rpa_problem& p, const Geometry& g, const TiledConfig& cfg, Diagnostics& diags,
                   TiledResult& res) {
  auto hit = [&](DiagKind kind, std::string detail) {
    if (cfg.strict_trace_asserts) {
      res = fail(RPA_ERR_REJECTED, "AssertionError", "");  // a bare assert: str(e) == ""
      return true;
    }
    diags.add(kind, std::move(detail) + "; the TPU kernel raises AssertionError at trace time, the emulation computes anyway");
    return false;
  };
  if (g.q_dtype != DType::kBFloat16 && g.q_dtype != DType::kFloat32 &&
      hit(DiagKind::kTraceAssertQDtype, "fold_on_2nd_minor (kernel.py:396) asserts q.dtype is bfloat16 or float32, q is " +
                                            std::string(dtype_name(g.q_dtype))))
    return true;
  const DType k_dtype = p.has_k_scale ? g.q_dtype : g.kv_dtype;  // kernel.py:630-637
  const DType v_dtype = p.has_v_scale ? g.q_dtype : g.kv_dtype;
  if (k_dtype != v_dtype &&
      hit(DiagKind::kTraceAssertKvDtypeMismatch,
          "flash_attention (kernel.py:476) asserts k.dtype == v.dtype, but k is " + std::string(dtype_name(k_dtype)) +
              " and v is " + std::string(dtype_name(v_dtype)) + " (only one of k_scale / v_scale is set)"))
    return true;
  if (g.head_dim != kLmLanes && g.head_dim % kLmLanes != 0 &&
      hit(DiagKind::kTraceAssertHeadDim, "broadcast_to_shape (kernel.py:570) needs head_dim a multiple of the " +
                                             num(kLmLanes) + " lanes of the l/m scratch, head_dim is " + num(g.head_dim)))
    return true;
  return false;
}

// The rows the harness reads back, cu_q_lens[num_seqs] clamped to
// [0, num_tokens]; -1 when num_seqs does not index cu_q_lens.
int64_t valid_rows(const rpa_problem& p) {
  if (p.num_seqs < 0 || p.num_seqs > p.max_num_seqs) return -1;
  return std::clamp<int64_t>(p.cu_q_lens[p.num_seqs], 0, p.num_tokens);
}

class Emulation {
 public:
  Emulation(const rpa_problem& p, const Geometry& g, const TiledConfig& cfg, float* out, Diagnostics& diags)
      : p_(p), g_(g), cfg_(cfg), out_(out), diags_(diags), codec_(g.kv_dtype), scalars_(p, diags) {}

  TiledResult run();

 private:
  void setup_compute();
  void load_q_block(int64_t h, int64_t q_len_start);
  void compute_kv_block(const VmemKvBuffer& buf, const FlashScalars& fs, int64_t seq);
  void write_o_block(int64_t h, int64_t q_len_start);

  const rpa_problem& p_;
  const Geometry& g_;
  const TiledConfig& cfg_;
  float* out_;
  Diagnostics& diags_;
  KvCodec codec_;
  ScalarTables scalars_;
  std::unique_ptr<PackedHbm> hbm_;
  FlashOptions fo_;
  // Scratch (kernel.py:837-863), NaN where VMEM is uninitialised.
  std::vector<float> acc_, l_, m_, qfold_;
  // Per-worker buffers for the strided loads and the flash step.
  struct WorkerScratch {
    std::vector<std::vector<float>> k, v;
    std::vector<float*> kp, vp;
    FlashWork work;
  };
  std::unique_ptr<WorkerPool> pool_;
  std::vector<WorkerScratch> scratch_;
  std::vector<FlashStats> chunk_stats_;
  std::vector<char> stored_;
  double multiply_adds_ = 0;  // over the run, against TiledConfig::max_multiply_adds
  // A finding's row updates over the run, and where the first was.
  struct Finding {
    RowTally rows;      // first_row: the q row within its sequence
    int64_t seq = -1;   // the first one's sequence
  };
  Finding padding_, pv_overflow_;
  static void tally(Finding& f, const RowTally& block, int64_t seq, int64_t q_len_start) {
    if (f.rows.rows == 0 && block.rows > 0) f.seq = seq, f.rows.first_row = q_len_start + block.first_row;
    f.rows.rows += block.rows;
  }
};

void Emulation::setup_compute() {
  hbm_ = std::make_unique<PackedHbm>(p_, g_, codec_);
  fo_.sm_scale = p_.sm_scale;
  fo_.has_soft_cap = p_.has_soft_cap != 0;
  fo_.soft_cap = p_.soft_cap;
  fo_.has_sliding_window = p_.has_sliding_window != 0;
  fo_.sliding_window = p_.sliding_window;
  fo_.mask_value = p_.mask_value;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t rows = g_.rows_alloc * g_.num_q_heads_per_kv_head;
  acc_.assign(size_t(g_.rows_alloc * g_.num_q_heads_per_blk * g_.head_dim), nan);
  l_.assign(size_t(g_.num_kv_heads_per_blk * rows * kLmLanes), nan);
  m_.assign(l_.size(), nan);
  qfold_.assign(size_t(g_.num_kv_heads_per_blk * rows * g_.head_dim), 0.0f);
  const int64_t step = kv_load_step(g_);
  const int64_t chunks = (g_.num_kv_heads_per_blk + step - 1) / step;
  // The KV heads of a step touch disjoint slices of l / m / acc, so chunks
  // run side by side; each chunk's arithmetic is the same on any thread, so
  // the result does not depend on the thread count.
  int64_t threads = p_.num_threads > 0 ? p_.num_threads : int64_t(std::thread::hardware_concurrency());
  threads = std::clamp<int64_t>(threads, 1, chunks);
  pool_ = std::make_unique<WorkerPool>(int(threads));
  scratch_.resize(size_t(pool_->size()));
  for (auto& sc : scratch_) {
    sc.k.assign(size_t(step), std::vector<float>(size_t(g_.num_kv_per_blk * g_.head_dim)));
    sc.v = sc.k;
    for (int64_t j = 0; j < step; ++j) sc.kp.push_back(sc.k[size_t(j)].data()), sc.vp.push_back(sc.v[size_t(j)].data());
  }
  chunk_stats_.resize(size_t(chunks));
  stored_.assign(size_t(g_.rows_alloc), 0);
}

// q_ref for grid step (h, q block): q[q_len_start : +num_q_per_blk,
// h * Hq_blk : +Hq_blk, :] (q_index_map, kernel.py:825-831), folded per KV
// head as fold_on_2nd_minor does (row = q row * group + head in group).
// Rows past num_tokens are Pallas padding; they are never stored for valid
// input, and are read as 0.
void Emulation::load_q_block(int64_t h, int64_t q_len_start) {
  const int64_t group = g_.num_q_heads_per_kv_head, d = g_.head_dim;
  const int64_t rows = g_.rows_alloc * group;
  for (int64_t kh = 0; kh < g_.num_kv_heads_per_blk; ++kh) {
    float* dst = qfold_.data() + kh * rows * d;
    for (int64_t qi = 0; qi < g_.rows_alloc; ++qi) {
      const int64_t row = q_len_start + qi;
      for (int64_t gi = 0; gi < group; ++gi) {
        float* o = dst + (qi * group + gi) * d;
        if (row >= g_.num_tokens) {
          std::fill(o, o + d, 0.0f);
          continue;
        }
        const float* src = p_.q + (row * g_.num_q_heads + h * g_.num_q_heads_per_blk + kh * group + gi) * d;
        std::copy(src, src + d, o);
      }
    }
  }
}

// The body of compute_with_kv_blk_in_cur_seq after the wait
// (kernel.py:620-655): for each chunk of kv_load_step KV heads, the strided
// load, the optional dequantisation, and flash_attention.
void Emulation::compute_kv_block(const VmemKvBuffer& buf, const FlashScalars& fs, int64_t seq) {
  const int64_t step = kv_load_step(g_), group = g_.num_q_heads_per_kv_head, d = g_.head_dim;
  const int64_t rows = g_.rows_alloc * group;
  const size_t n = size_t(g_.num_kv_per_blk * d);
  const auto chunk_job = [&](int64_t ci, int worker) {
    WorkerScratch& sc = scratch_[size_t(worker)];
    FlashStats& st = chunk_stats_[size_t(ci)];
    st = FlashStats{};
    const int64_t chunk = ci * step;
    strided_load_kv(buf.words.data(), g_, codec_, chunk * 2, g_.num_combined_kv_heads_per_blk, sc.kp.data(), sc.vp.data());
    for (int64_t j = 0; j < step; ++j) {
      float* k = sc.kp[size_t(j)];
      float* v = sc.vp[size_t(j)];
      // k.astype(float32) * k_scale, then astype(q dtype) (kernel.py:630-637).
      if (p_.has_k_scale)
        for (size_t i = 0; i < n; ++i) k[i] = round_to(g_.q_dtype, k[i] * p_.k_scale);
      if (p_.has_v_scale)
        for (size_t i = 0; i < n; ++i) v[i] = round_to(g_.q_dtype, v[i] * p_.v_scale);
      const int64_t kv_head = chunk + j;
      const int64_t q_head = kv_head * group;
      FlashRefs r;
      r.q = qfold_.data() + kv_head * rows * d;
      r.k = k;
      r.v = v;
      r.l = l_.data() + kv_head * rows * kLmLanes;
      r.m = m_.data() + kv_head * rows * kLmLanes;
      r.acc = acc_.data() + q_head * d;
      r.acc_row_stride = g_.num_q_heads_per_blk * d;
      FlashStats one;
      flash_attention(g_, fo_, fs, r, sc.work, one);
      st.multiply_adds += one.multiply_adds;
      st.padding_weighted.merge(one.padding_weighted);
      st.pv_overflow.merge(one.pv_overflow);
    }
  };
  const int64_t chunks = int64_t(chunk_stats_.size());
  const StoreRange st = store_range(g_, fs);
  const int64_t stored_rows = std::min<int64_t>(st.end, g_.rows_alloc) - std::max<int64_t>(st.start, 0);
  // Hand out chunks only when a step has enough work to pay for the wake-up.
  const double work = double(std::max<int64_t>(stored_rows, 0)) * double(group) * double(g_.num_kv_per_blk) * double(d);
  if (work * double(chunks) >= 65536.0) {
    pool_->parallel_for(chunks, chunk_job);
  } else {
    for (int64_t ci = 0; ci < chunks; ++ci) chunk_job(ci, 0);
  }
  for (const FlashStats& c : chunk_stats_) {  // merged in head order: deterministic
    multiply_adds_ += c.multiply_adds;
    tally(padding_, c.padding_weighted, seq, fs.q_len_start);
    tally(pv_overflow_, c.pv_overflow, seq, fs.q_len_start);
  }
  for (int64_t qi = std::max<int64_t>(st.start, 0); qi < std::min<int64_t>(st.end, g_.rows_alloc); ++qi)
    stored_[size_t(qi)] = 1;
}

// o_ref[...] = acc_ref[...].astype(q dtype) (kernel.py:675); Pallas drops
// the block's rows past num_tokens on write-back.
void Emulation::write_o_block(int64_t h, int64_t q_len_start) {
  const int64_t hb = g_.num_q_heads_per_blk, d = g_.head_dim;
  const bool exact = g_.q_dtype == DType::kFloat32;
  for (int64_t qi = 0; qi < g_.rows_alloc && q_len_start + qi < g_.num_tokens; ++qi) {
    const float* src = acc_.data() + qi * hb * d;
    float* dst = out_ + ((q_len_start + qi) * g_.num_q_heads + h * hb) * d;
    for (int64_t i = 0; i < hb * d; ++i) dst[i] = exact ? src[i] : round_to(g_.q_dtype, src[i]);
  }
}

TiledResult Emulation::run() {
  if (cfg_.compute) setup_compute();
  KvDma dma(g_, hbm_.get(), scalars_, diags_);
  const int64_t num_seqs = scalars_.num_seqs();
  const int64_t nq = g_.num_q_per_blk, nkv = g_.num_kv_per_blk;
  const int64_t rows_out = valid_rows(p_);
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  int64_t seq_buf_idx[2] = {0, 0};  // jnp.array((0, 0)), kernel.py:868

  for (int64_t h = 0; h < g_.num_heads_blks; ++h) {
    for (int64_t qb = 0; qb < g_.num_q_blks; ++qb) {
      const int64_t init_seq_idx = seq_buf_idx[0], init_buf_idx = seq_buf_idx[1];
      const int64_t q_len_start = qb * nq, q_len_end = q_len_start + nq;  // kernel.py:335-336
      if (h + qb == 0) dma.start({h, init_seq_idx, 0}, init_buf_idx);   // prefetch_first_kv_blk
      if (cfg_.compute) {
        load_q_block(h, q_len_start);
        std::fill(stored_.begin(), stored_.end(), 0);
      }
      // The while loop over sequences (kernel.py:667-671).
      int64_t done = 0, seq = init_seq_idx, buf = init_buf_idx;
      while (done == 0 && q_len_start < scalars_.cu_q_len(num_seqs) && seq < num_seqs) {  // is_cur_q_blk_needed
        FlashScalars fs;
        fs.q_start = scalars_.cu_q_len(seq);
        fs.q_end = scalars_.cu_q_len(seq + 1);
        fs.q_len = fs.q_end - fs.q_start;
        fs.kv_len = scalars_.kv_len(seq);
        fs.q_len_start = q_len_start;
        const PrefetchContext pc{fs.kv_len, fs.q_end, q_len_end, nkv, num_seqs};
        // The while loop over KV blocks (kernel.py:658-662).
        int64_t kv_blk = 0, cur_buf = buf;
        while (kv_blk * nkv < fs.kv_len) {
          if ((kv_blk + 1) * nkv > kInt32Max) {
            diags_.add(DiagKind::kInt32Overflow, "(kv_blk_idx + 1) * num_kv_per_blk exceeds int32 for kv_len " +
                                                     num(fs.kv_len) + " (seq " + num(seq) +
                                                     "): the TPU kernel's KV loop would wrap; the emulation stops it");
            break;
          }
          const PrefetchIds next = next_prefetch_ids(pc, h, seq, kv_blk, cur_buf);
          if (next.block.heads_blk < g_.num_heads_blks) dma.start(next.block, next.buf);  // prefetch_next_kv_blk
          const KvBlockId cur{h, seq, kv_blk};
          const VmemKvBuffer& kv = dma.wait(cur, cur_buf);
          if (cfg_.on_consume) cfg_.on_consume(cur);
          if (cfg_.compute) {
            fs.kv_blk_idx = kv_blk;
            compute_kv_block(kv, fs, seq);
            if (multiply_adds_ > cfg_.max_multiply_adds)
              return fail(RPA_ERR_UNSUPPORTED, "",
                          "tiled: work budget of " + num(int64_t(cfg_.max_multiply_adds)) +
                              " multiply-adds spent (kv_lens, cu_q_lens or num_seqs far beyond the pages)");
          }
          ++kv_blk;
          cur_buf = next.buf;
        }
        buf = cur_buf;
        seq = fs.q_end <= q_len_end ? seq + 1 : seq;  // kernel.py:663-664
        done = fs.q_end < q_len_end ? done : 1;
      }
      seq_buf_idx[0] = seq < num_seqs ? seq : 0;  // kernel.py:673-674
      seq_buf_idx[1] = buf;
      if (cfg_.compute) {
        write_o_block(h, q_len_start);
        for (int64_t qi = 0; qi < g_.rows_alloc && q_len_start + qi < rows_out; ++qi)
          if (!stored_[size_t(qi)])
            diags_.add(DiagKind::kUnstoredRows, "row " + num(q_len_start + qi) + " of head block " + num(h) +
                                                    " (below cu_q_lens[num_seqs] = " + num(rows_out) +
                                                    ") was not written by any store in its grid step: it holds a stale "
                                                    "accumulator");
      }
    }
  }
  dma.finish();
  if (padding_.rows.rows > 0)
    diags_.add(DiagKind::kMaskValueOverPadding,
               "the kernel adds mask_value (" + std::to_string(p_.mask_value) +
                   ") over the zeroed KV slots past kv_len in a sequence's last KV block instead of dropping them; in " +
                   num(padding_.rows.rows) + " row updates they got non-zero weight (first: seq " +
                   num(padding_.seq) + ", q row " + num(padding_.rows.first_row) + "), which the reference has no slots for");
  if (pv_overflow_.rows.rows > 0)
    diags_.add(DiagKind::kPvOverflow,
               "the kernel's p.v of a KV block, dot(s_curr, v) with unnormalised weights, and l_alpha * o_curr + "
               "beta * qkv (kernel.py:540, 581) went past float32's 3.4e38 from finite values in " +
                   num(pv_overflow_.rows.rows) + " row updates (first: seq " + num(pv_overflow_.seq) + ", q row " +
                   num(pv_overflow_.rows.first_row) + "); the reference normalises the weights first (kernel.py:142-145)");
  return {};
}

}  // namespace

TiledResult tiled_attention(const rpa_problem& p, const TiledConfig& cfg, float* out, Diagnostics& diags) {
  Geometry g;
  if (std::string why = make_geometry(p, cfg, g); !why.empty()) return fail(RPA_ERR_UNSUPPORTED, "", "tiled: " + why);
  TiledResult res;
  if (trace_asserts(p, g, cfg, diags, res)) return res;
  if (cfg.compute && g.num_tokens > 0 && out == nullptr) return fail(RPA_ERR_INTERNAL, "", "tiled: out is null");
  Emulation e(p, g, cfg, out, diags);
  return e.run();
}

}  // namespace rpa::tiled
