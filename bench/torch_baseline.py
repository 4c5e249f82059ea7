#!/usr/bin/env python3
"""What a CPU user would write instead of the fast kernel: PyTorch, per sequence.

Times ragged paged attention written with plain PyTorch ops (matmul, masked
softmax, matmul; GQA by folding each KV head's query group into one matrix)
on the shapes `rpa bench` times (docs/bench.md, "What is timed"), in two
forms:

  gathered    - each call gathers the sequence's K and V out of the pages;
  contiguous  - K and V already contiguous per KV head (PyTorch's best case:
                the gather is done once, before timing).

Given `--rpa-json FILE` (the output of `rpa bench --json`), it also prints the
fast kernel's median beside each PyTorch median and whether it is faster.
Exits 1 when any fast row is not faster than both PyTorch forms, 2 on bad
input, 3 when its own PyTorch attention disagrees with a float64 loop on a
small batch (checked before timing). Not part of the build or the tests: it needs Debian's python3-torch.

  python3 bench/torch_baseline.py --threads 2 --rpa-json bench.json
"""
import argparse
import json
import math
import statistics
import sys
import time

# tests/pallas/tpu_ragged_paged_attention_test.py at cec06d116c, the three
# configurations of harness/upstream_cases.cc's upstream_seq_lens (q_len, kv_len).
SEQ_LENS = {
    "decode": [(1, 18), (1, 129), (1, 597), (1, 122), (1, 64), (1, 322), (1, 463), (1, 181),
               (1, 1107), (1, 123), (1, 31), (1, 18), (1, 1229), (1, 229), (1, 87), (1, 1328)],
    "prefill": [(5, 18), (15, 129), (120, 597), (100, 122), (21, 64), (32, 322), (251, 463), (40, 181),
                (64, 1107), (99, 123), (10, 31), (5, 18), (3, 1229), (120, 229), (9, 87), (2, 1328)],
    "mixed": [(5, 18), (1, 129), (120, 597), (1, 122), (1, 64), (32, 322), (251, 463), (1, 181),
              (1, 1107), (99, 123), (1, 31), (5, 18), (3, 1229), (117, 229), (1, 87), (1, 1328)],
}
NUM_Q_HEADS, NUM_KV_HEADS, HEAD_DIM, PAGE_SIZE, NUM_PAGES = 32, 8, 128, 16, 1000


def build(torch, shape, dtype, seed):
    """q, K/V pages and each sequence's (q rows, page ids, kv_len); sequences on consecutive pages."""
    gen = torch.Generator().manual_seed(seed)
    lens = SEQ_LENS[shape]
    tokens = sum(q for q, _ in lens)
    q = torch.randn(tokens, NUM_Q_HEADS, HEAD_DIM, generator=gen).to(dtype)
    k_pages = torch.randn(NUM_PAGES, PAGE_SIZE, NUM_KV_HEADS, HEAD_DIM, generator=gen).to(dtype)
    v_pages = torch.randn(NUM_PAGES, PAGE_SIZE, NUM_KV_HEADS, HEAD_DIM, generator=gen).to(dtype)
    seqs, row, page = [], 0, 0
    for q_len, kv_len in lens:
        n = -(-kv_len // PAGE_SIZE)
        seqs.append((row, q_len, torch.arange(page, page + n), kv_len))
        row, page = row + q_len, page + n
    return q, k_pages, v_pages, seqs


def attend(torch, q_s, k, v, kv_len, scale):
    """q_s [q_len, Hq, D]; k, v [Hkv, kv_len, D]. Causal as the reference: query i sits at kv_len - q_len + i."""
    q_len = q_s.shape[0]
    group = NUM_Q_HEADS // NUM_KV_HEADS
    # q head h uses KV head h // group (ref_ragged_paged_attention's repeat).
    qg = q_s.reshape(q_len, NUM_KV_HEADS, group, HEAD_DIM).permute(1, 2, 0, 3).reshape(NUM_KV_HEADS, group * q_len, HEAD_DIM)
    s = torch.matmul(qg, k.transpose(1, 2)) * scale
    if q_len > 1:
        qpos = torch.arange(q_len).repeat(group) + (kv_len - q_len)
        s = s.masked_fill(torch.arange(kv_len)[None, :] > qpos[:, None], float("-inf"))
    p = torch.softmax(s.float() if s.dtype != torch.float64 else s, dim=-1).to(v.dtype)
    o = torch.matmul(p, v)
    return o.reshape(NUM_KV_HEADS, group, q_len, HEAD_DIM).permute(2, 0, 1, 3).reshape(q_len, NUM_Q_HEADS, HEAD_DIM)


def run_gathered(torch, q, k_pages, v_pages, seqs, out, scale):
    for row, q_len, pages, kv_len in seqs:
        k = k_pages[pages].reshape(-1, NUM_KV_HEADS, HEAD_DIM)[:kv_len].transpose(0, 1)
        v = v_pages[pages].reshape(-1, NUM_KV_HEADS, HEAD_DIM)[:kv_len].transpose(0, 1)
        out[row:row + q_len] = attend(torch, q[row:row + q_len], k, v, kv_len, scale)


def run_contiguous(torch, q, kv, seqs, out, scale):
    for (row, q_len, _, kv_len), (k, v) in zip(seqs, kv):
        out[row:row + q_len] = attend(torch, q[row:row + q_len], k, v, kv_len, scale)


def self_check(torch, scale):
    """attend() against a per-(q head, query) float64 loop on a small batch: the GQA fold and the causal mask."""
    gen = torch.Generator().manual_seed(1)
    lens = [(3, 20), (1, 7), (5, 5)]
    q = torch.randn(sum(l for l, _ in lens), NUM_Q_HEADS, HEAD_DIM, generator=gen, dtype=torch.float64)
    row = 0
    for q_len, kv_len in lens:
        k = torch.randn(NUM_KV_HEADS, kv_len, HEAD_DIM, generator=gen, dtype=torch.float64)
        v = torch.randn(NUM_KV_HEADS, kv_len, HEAD_DIM, generator=gen, dtype=torch.float64)
        got = attend(torch, q[row:row + q_len], k, v, kv_len, scale)
        for h in range(NUM_Q_HEADS):
            kh = h * NUM_KV_HEADS // NUM_Q_HEADS
            for i in range(q_len):
                n = kv_len - q_len + i + 1  # keys this query sees
                w = torch.softmax((k[kh, :n] @ q[row + i, h]) * scale, dim=0)
                want = w @ v[kh, :n]
                if not torch.allclose(got[i, h], want, rtol=1e-5, atol=1e-6):
                    print(f"torch_baseline: self-check failed at sequence ({q_len}, {kv_len}), head {h}, query {i}",
                          file=sys.stderr)
                    sys.exit(3)
        row += q_len


def median_seconds(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def fast_medians(path):
    """(shape, dtype) -> the fast kernel's median_s, for q and KV of the same dtype."""
    try:
        with open(path) as f:
            rows = json.load(f)["rows"]
        return {(r["shape"], r["q_dtype"]): r["median_s"] for r in rows
                if r["impl"] == "fast" and r["q_dtype"] == r["kv_dtype"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"torch_baseline: cannot read fast rows from {path}: {e}", file=sys.stderr)
        sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="decode,prefill,mixed")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rpa-json", help="output of `rpa bench --json` to compare the fast kernel against")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_baseline: PyTorch is not installed (Debian: apt-get install python3-torch)", file=sys.stderr)
        return 2
    shapes, dtypes = a.shapes.split(","), a.dtypes.split(",")
    bad = [s for s in shapes if s not in SEQ_LENS] + [d for d in dtypes if d not in ("float32", "bfloat16")]
    if bad or a.repeats < 1 or a.threads < 1:
        print(f"torch_baseline: bad argument(s): {bad or 'repeats and threads must be >= 1'}", file=sys.stderr)
        return 2
    torch.set_num_threads(a.threads)
    fast = fast_medians(a.rpa_json) if a.rpa_json else {}
    scale = 1.0 / math.sqrt(HEAD_DIM)
    rows, beaten = [], True
    with torch.no_grad():
        self_check(torch, scale)
        for shape in shapes:
            for name in dtypes:
                dtype = getattr(torch, name)
                q, k_pages, v_pages, seqs = build(torch, shape, dtype, a.seed)
                out = torch.empty_like(q)
                kv = [(k_pages[p].reshape(-1, NUM_KV_HEADS, HEAD_DIM)[:n].transpose(0, 1).contiguous(),
                       v_pages[p].reshape(-1, NUM_KV_HEADS, HEAD_DIM)[:n].transpose(0, 1).contiguous())
                      for _, _, p, n in seqs]
                g = median_seconds(lambda: run_gathered(torch, q, k_pages, v_pages, seqs, out, scale), a.repeats)
                c = median_seconds(lambda: run_contiguous(torch, q, kv, seqs, out, scale), a.repeats)
                row = {"shape": shape, "dtype": name, "gathered_s": g, "contiguous_s": c}
                f = fast.get((shape, name))
                if a.rpa_json:
                    row["fast_s"] = f
                    row["fast_beats_both"] = f is not None and f < min(g, c)
                    beaten = beaten and row["fast_beats_both"]
                rows.append(row)
                if not a.json:
                    line = f"{shape:8s} {name:9s} gathered {g * 1e3:9.3f} ms  contiguous {c * 1e3:9.3f} ms"
                    if a.rpa_json:
                        line += ("  fast (no row)" if f is None else
                                 f"  fast {f * 1e3:8.3f} ms  {min(g, c) / f:6.1f}x  "
                                 f"{'faster' if row['fast_beats_both'] else 'NOT FASTER'}")
                    print(line, flush=True)
    if a.json:
        print(json.dumps({"torch": torch.__version__, "threads": a.threads, "repeats": a.repeats, "rows": rows}))
    return 0 if beaten else 1


if __name__ == "__main__":
    sys.exit(main())
