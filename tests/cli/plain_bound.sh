#!/usr/bin/env bash
# rpa conform reports the plain bound (the exact truth only) beside its verdict. gen-large-600693 (sm_scale 1e37,
# integer V) has scores past float32's range: the oracle's float32 softmax is NaN there (its integer cast 0), the
# exact math finite; the fast kernel recomputes such rows in double and must be within the plain bound.
. "$(dirname "$0")/lib/scratch.sh"

"$rpa" conform --shapes large --seed 600693 --cases 1 --impls oracle,fast --progress 0 --json r.json > out.txt 2> err.txt
rc=$?
[ "$rc" -eq 0 ] || bad "conform: exit $rc: $(cat out.txt err.txt)"
grep -q "plain bound (exact truth only" out.txt || bad "no plain-bound lines in the summary: $(cat out.txt)"
# One impls entry per line, then the fields this test reads.
tr '{' '\n' < r.json | grep '"impl":"fast"' > fast.txt
grep -q '"plain_over":0' fast.txt || bad "fast over the plain bound: $(cat fast.txt)"
grep -q '"plain_over_alone":0' fast.txt || bad "fast over the plain bound alone: $(cat fast.txt)"
grep -q '"worst_plain_case":"gen-large-600693"' fast.txt || bad "worst plain case not named: $(cat fast.txt)"
exit $fail
