#!/usr/bin/env bash
# rpa run-case and rpa compare on corpus/reference: outputs, exit codes, Python error lines, diagnostics, bounds.
set -u
rpa=$1
src=$2
dir=$src/corpus/reference
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=1; }

# Runnable cases and the dtype that judges them (docs/tolerance.md).
runs() {
  local name=$1 judge=$2
  for impl in oracle truth truth-exact; do
    "$rpa" run-case "$dir/$name.json" --impl "$impl" --out "$tmp/$name.$impl.npy" 2> "$tmp/$name.$impl.err"
    local rc=$?
    [ "$rc" -eq 0 ] || bad "$name --impl $impl: exit $rc: $(cat "$tmp/$name.$impl.err")"
    [ -s "$tmp/$name.$impl.npy" ] || bad "$name --impl $impl: no output"
  done
  "$rpa" compare "$tmp/$name.oracle.npy" "$tmp/$name.truth.npy" --dtype "$judge" --case "$dir/$name.json" \
    > "$tmp/$name.cmp" || bad "$name: oracle beyond the bound: $(cat "$tmp/$name.cmp")"
  "$rpa" compare "$tmp/$name.oracle.npy" "$tmp/$name.truth.npy" --dtype "$judge" --json | grep -q '"pass": true' ||
    bad "$name: compare --json"
}
runs one_key_bf16 bfloat16
runs gqa_fp8_scales_window_cap bfloat16
runs int8_kv_no_scale int8
runs fully_masked_rows float16
runs page_index_out_of_range float32

# One query and one key: the output is V exactly (float32 bits 1.5, -2, 0.25, 3).
bits=$(tail -c 16 "$tmp/one_key_bf16.oracle.npy" | od -An -tx4 | tr -s ' ' | sed 's/^ //')
[ "$bits" = "3fc00000 c0000000 3e800000 40400000" ] || bad "one_key_bf16: output bits $bits"

# Page indices outside [0, total_num_pages) are read as JAX reads them, and reported.
grep -qF 'page_indices[0, 0] = -1 is outside [0, 3)' "$tmp/page_index_out_of_range.oracle.err" || bad "no diagnostic for -1"
grep -qF 'page_indices[0, 1] = 7 is outside [0, 3)' "$tmp/page_index_out_of_range.oracle.err" || bad "no diagnostic for 7"

# What the Python reference raises: 'Class: message' on stderr, exit 1, no output.
raises() {
  local name=$1 line=$2
  "$rpa" run-case "$dir/$name.json" --impl oracle --out "$tmp/$name.npy" 2> "$tmp/$name.err"
  local rc=$?
  [ "$rc" -eq 1 ] || bad "$name: exit $rc, expected 1"
  [ "$(cat "$tmp/$name.err")" = "$line" ] || bad "$name: stderr '$(cat "$tmp/$name.err")', expected '$line'"
  [ -e "$tmp/$name.npy" ] && bad "$name: output written"
}
raises num_seqs_zero "ValueError: Need at least one array to concatenate."
raises sliding_window_too_large "OverflowError: Python int 4294967296 too large to convert to int32"

# Malformed input exits 2: no contents, two cases, an unknown implementation.
sed 's/, "data_seed": 21//' "$dir/int8_kv_no_scale.json" > "$tmp/nodata.json"
"$rpa" run-case "$tmp/nodata.json" --impl oracle --out "$tmp/nodata.npy" 2> /dev/null
[ $? -eq 2 ] || bad "case without q contents: exit code"
{ tr -d '\n' < "$dir/one_key_bf16.json"; echo; tr -d '\n' < "$dir/one_key_bf16.json"; echo; } > "$tmp/two.jsonl"
"$rpa" run-case "$tmp/two.jsonl" --impl oracle --out "$tmp/two.npy" 2> /dev/null
[ $? -eq 2 ] || bad "two cases: exit code"
"$rpa" run-case "$dir/one_key_bf16.json" --impl no-such --out "$tmp/x.npy" 2> /dev/null
[ $? -eq 2 ] || bad "unknown implementation: exit code"

# The bound has teeth: another sm_scale's output is far beyond it.
sed 's/"sm_scale": 0.25/"sm_scale": 0.5/' "$dir/gqa_fp8_scales_window_cap.json" > "$tmp/other.json"
"$rpa" run-case "$tmp/other.json" --impl oracle --out "$tmp/other.npy" 2> /dev/null
"$rpa" compare "$tmp/other.npy" "$tmp/gqa_fp8_scales_window_cap.truth.npy" --dtype bfloat16 > /dev/null
[ $? -eq 1 ] || bad "a different sm_scale passed compare"
"$rpa" compare "$tmp/other.npy" "$tmp/one_key_bf16.truth.npy" --dtype bfloat16 2> /dev/null > /dev/null
[ $? -eq 2 ] || bad "shape mismatch: exit code"

[ "$fail" -eq 0 ] && echo "reference cases: all as expected"
exit $fail
