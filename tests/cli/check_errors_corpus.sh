#!/usr/bin/env bash
# Replays corpus/errors/*.json through `rpa check-errors` and compares each outcome with the .expected file beside it.
#
# The .expected lines are what the upstream Python source produced for the
# case (see docs/errors.md); the comparison is byte for byte.
set -u
rpa=$1
src=$2
dir="$src/corpus/errors"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
for case in "$dir"/*.json; do
  expected="${case%.json}.expected"
  name=$(basename "$case" .json)
  if [ ! -f "$expected" ]; then echo "FAIL $name: no $(basename "$expected")"; fail=1; continue; fi
  if ! "$rpa" check-errors "$case" > "$tmp/out" 2> "$tmp/err"; then
    echo "FAIL $name: exit $?: $(cat "$tmp/err")"; fail=1; continue
  fi
  if ! cmp -s "$tmp/out" "$expected"; then
    echo "FAIL $name"; echo "  expected: $(cat "$expected")"; echo "  got:      $(cat "$tmp/out")"; fail=1
  fi
  n=$((n + 1))
done
# The same cases as one JSONL stream on stdin, through --out: one line each, in order.
cat "$dir"/*.json > "$tmp/all.jsonl"
cat "$dir"/*.expected > "$tmp/all.expected"
"$rpa" check-errors - --out "$tmp/all.out" < "$tmp/all.jsonl" || { echo "FAIL stdin run: exit $?"; fail=1; }
cmp -s "$tmp/all.out" "$tmp/all.expected" || { echo "FAIL stdin run: outcomes differ"; fail=1; }
# --device-kind stands in for a case's missing device_kind (outcome from the upstream source, TPU v4: (32, 32) clipped).
want='{"id":"tpu_version_too_old","ok":true,"num_q_heads_per_blk":8,"num_combined_kv_heads_per_blk":4,"num_kv_pages_per_blk":4,"num_q_per_blk":32}'
got=$("$rpa" check-errors "$dir/tpu_version_too_old.json" --device-kind "TPU v4")
[ "$got" = "$want" ] || { echo "FAIL --device-kind: got $got"; fail=1; }
# A case's own device_kind wins over --device-kind.
got=$("$rpa" check-errors "$dir/assert_tpu_version_match.json" --device-kind "TPU v4")
[ "$got" = "$(cat "$dir/assert_tpu_version_match.expected")" ] || { echo "FAIL device_kind precedence: got $got"; fail=1; }
# A malformed line anywhere: exit 2 and no --out file at all.
{ cat "$tmp/all.jsonl"; echo '{"id": "broken", "entry": '; } > "$tmp/bad.jsonl"
"$rpa" check-errors "$tmp/bad.jsonl" --out "$tmp/bad.out" 2> /dev/null
rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL malformed: exit $rc, expected 2"; fail=1; }
[ ! -e "$tmp/bad.out" ] || { echo "FAIL malformed: partial --out written"; fail=1; }
[ "$n" -gt 0 ] || { echo "FAIL: no cases in $dir"; fail=1; }
[ "$fail" -eq 0 ] && echo "check-errors corpus: $n cases agree"
exit $fail
