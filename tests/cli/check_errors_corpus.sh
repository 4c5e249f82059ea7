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
# A malformed line anywhere: exit 2 and no --out file at all.
{ cat "$tmp/all.jsonl"; echo '{"id": "broken", "entry": '; } > "$tmp/bad.jsonl"
"$rpa" check-errors "$tmp/bad.jsonl" --out "$tmp/bad.out" 2> /dev/null
rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL malformed: exit $rc, expected 2"; fail=1; }
[ ! -e "$tmp/bad.out" ] || { echo "FAIL malformed: partial --out written"; fail=1; }
[ "$n" -gt 0 ] || { echo "FAIL: no cases in $dir"; fail=1; }
[ "$fail" -eq 0 ] && echo "check-errors corpus: $n cases agree"
exit $fail
