#!/usr/bin/env bash
# rpa gen-case: the case conform generates for a seed, as a case file: named by its id, the same bytes every time, runnable by run-case.
. "$(dirname "$0")/lib/scratch.sh"

"$rpa" gen-case --seed 7 > a.json || bad "gen-case to stdout: exit $?"
"$rpa" gen-case --seed 7 --out b.json 2> err.txt || bad "gen-case --out: exit $?"
cmp -s a.json b.json || bad "stdout and --out differ"
grep -q '"id": *"gen-7"' a.json || bad "small case id: $(head -c 200 a.json)"
grep -q "gen-7 written to b.json" err.txt || bad "no note on stderr: $(cat err.txt)"
"$rpa" gen-case --seed 7 --shapes large --out c.json 2> /dev/null || bad "large: exit $?"
grep -q '"id": *"gen-large-7"' c.json || bad "large case id: $(head -c 200 c.json)"
cmp -s a.json c.json && bad "large and small cases are the same"
"$rpa" gen-case --seed 7 --shapes large --out d.json 2> /dev/null
cmp -s c.json d.json || bad "the same seed gave different cases"
# Each runs through run-case: exit 0, or 1 with the Python exception the entry raises; never 2 (unreadable).
for f in a.json c.json; do
  "$rpa" run-case "$f" --impl fast --out out.npy > run.txt 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || bad "run-case $f: exit $rc: $(cat run.txt)"
done
"$rpa" gen-case --seed 7 --shapes huge > /dev/null 2> err.txt
rc=$?
[ "$rc" -eq 2 ] || bad "unknown --shapes: exit $rc, want 2"
exit $fail
