#!/usr/bin/env bash
# Malformed case files get exit code 2, one line on stderr naming file, line and field, and no output file.
set -u
rpa=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
good='{"id":"g","entry":"static","q":{"shape":[4,2,8],"dtype":"float32"},"kv_pages":{"shape":[2,4,2,8],"dtype":"float32"},"kv_lens":{"shape":[1],"dtype":"int32","data":[3]},"page_indices":{"shape":[1,2],"dtype":"int32","data":[0,1]},"cu_q_lens":{"shape":[2],"dtype":"int32","data":[0,3]},"num_seqs":{"shape":[1],"dtype":"int32","data":[1]}}'
sub() {  # literal replacement of $1 by $2 in the good case
  local from=$1 to=$2
  printf '%s' "${good/"$from"/"$to"}"
}
check() {  # name, contents of line 2, text the message must contain
  local name=$1 bad=$2 needle=$3
  printf '%s\n%s\n' "$good" "$bad" > "$tmp/$name.jsonl"
  "$rpa" check-errors "$tmp/$name.jsonl" --out "$tmp/$name.out" 2> "$tmp/$name.err" > /dev/null
  local rc=$?
  local lines
  lines=$(wc -l < "$tmp/$name.err")
  if [ "$rc" -ne 2 ]; then echo "FAIL $name: exit $rc, expected 2"; fail=1; fi
  if [ "$lines" -ne 1 ]; then echo "FAIL $name: $lines lines on stderr"; cat "$tmp/$name.err"; fail=1; fi
  if ! grep -q -- "$name.jsonl:2" "$tmp/$name.err"; then echo "FAIL $name: no file:line in: $(cat "$tmp/$name.err")"; fail=1; fi
  if ! grep -q -- "$needle" "$tmp/$name.err"; then echo "FAIL $name: '$needle' not in: $(cat "$tmp/$name.err")"; fail=1; fi
  if [ -e "$tmp/$name.out" ]; then echo "FAIL $name: partial output written"; fail=1; fi
}
check bad_json '{"id": "x", "entry": ' 'invalid JSON'
check not_object '[1,2,3]' 'JSON object'
check no_entry "$(sub '"entry":"static",' '')" "entry"
check bad_dtype "$(sub '"dtype":"float32"' '"dtype":"float33"')" "q.dtype"
check neg_shape "$(sub '"shape":[4,2,8]' '"shape":[4,-2,8]')" "q.shape\[1\]"
check data_vs_shape "$(sub '"data":[0,1]' '"data":[0,1,2]')" "page_indices.data"
check int32_range "$(sub '"data":[3]' '"data":[4294967296]')" "kv_lens.data\[0\]"
check option_type "$(sub '"entry":"static"' '"entry":"static","soft_cap":"x"')" "soft_cap"
# A missing file and an unreadable path are bad input too.
"$rpa" check-errors "$tmp/none.jsonl" 2> "$tmp/none.err" > /dev/null
[ $? -eq 2 ] || { echo "FAIL missing file: exit code"; fail=1; }
[ "$fail" -eq 0 ] && echo "malformed cases: all rejected with exit 2"
exit $fail
