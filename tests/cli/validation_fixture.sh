#!/usr/bin/env bash
# Replays tests/fixtures/validation_cases.jsonl through `rpa check-errors`: every outcome must equal the upstream source's.
#
# validation_outcomes.jsonl was produced by running the upstream kernel.py and
# tuned_block_sizes.py (jax-ml/jax cec06d116c) on these cases (docs/errors.md,
# "How the fixture was made"); agreement must be 100%, byte for byte.
set -u
rpa=$1
src=$2
cases="$src/tests/fixtures/validation_cases.jsonl"
expected="$src/tests/fixtures/validation_outcomes.jsonl"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$rpa" check-errors "$cases" --out "$tmp/out.jsonl" || { echo "FAIL: check-errors exit $?"; exit 1; }
total=$(wc -l < "$expected")
if cmp -s "$tmp/out.jsonl" "$expected"; then
  echo "validation fixture: $total of $total outcomes agree"
  exit 0
fi
bad=$(diff "$tmp/out.jsonl" "$expected" | grep -c '^<')
echo "FAIL: $bad of $total outcomes differ; the first few (< ours, > upstream):"
diff "$tmp/out.jsonl" "$expected" | head -20
exit 1
