#!/usr/bin/env bash
# rpa --simd: an unknown target is refused with the list of this CPU's; a known one runs conform on it and says so.
. "$(dirname "$0")/lib/scratch.sh"

"$rpa" conform --simd no-such-target --cases 1 > out.txt 2> err.txt
rc=$?
[ "$rc" -eq 2 ] || bad "unknown target: exit $rc, want 2"
grep -q "SIMD target 'no-such-target' is not one this CPU and build run (" err.txt || bad "unknown target: $(cat err.txt)"
[ -s out.txt ] && bad "unknown target: ran anyway: $(cat out.txt)"

# The targets on offer, from that message; each of the first two (the best, and the next narrower) runs.
targets=$(sed -n "s/.*run (\(.*\))$/\1/p" err.txt | tr -d ' ' | tr ',' '\n' | head -2)
[ -n "$targets" ] || bad "no targets listed"
for t in $targets; do
  lower=$(echo "$t" | tr 'A-Z' 'a-z')
  "$rpa" --simd "$lower" conform --shapes large --cases 4 --progress 0 > "out.$t" 2> "err.$t"
  rc=$?
  [ "$rc" -eq 0 ] || bad "--simd $lower: exit $rc: $(cat "err.$t")"
  grep -q "SIMD $t)" "out.$t" || bad "--simd $lower: summary does not name $t: $(head -1 "out.$t")"
  grep -q "rpa: SIMD code limited to $t" "err.$t" || bad "--simd $lower: no note on stderr"
done
exit $fail
