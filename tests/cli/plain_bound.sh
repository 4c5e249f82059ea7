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

# rpa compare --bound plain applies the same bound to one output: fast within it; the tiled emulation, NaN as the
# Pallas kernel is there, beyond it, though the judge's bound (kernel) accepts its NaN beside the reference's.
"$rpa" gen-case --shapes large --seed 600693 --out c.json 2> /dev/null || bad "gen-case: exit $?"
for impl in truth-exact fast tiled; do
  "$rpa" run-case c.json --impl "$impl" --out "$impl.npy" 2> /dev/null || bad "run-case --impl $impl: exit $?"
done
"$rpa" compare fast.npy truth-exact.npy --dtype int4 --case c.json --bound plain > cmp.txt 2>&1
rc=$?
[ "$rc" -eq 0 ] || bad "fast against the plain bound: exit $rc: $(cat cmp.txt)"
"$rpa" compare tiled.npy truth-exact.npy --dtype int4 --case c.json --bound plain > cmp.txt 2>&1
rc=$?
[ "$rc" -eq 1 ] || bad "tiled against the plain bound: exit $rc, want 1: $(cat cmp.txt)"
"$rpa" compare tiled.npy truth-exact.npy --dtype int4 --case c.json --bound kernel > cmp.txt 2>&1
rc=$?
[ "$rc" -eq 0 ] || bad "tiled against the kernel bound: exit $rc: $(cat cmp.txt)"
exit $fail
