#!/usr/bin/env bash
# The nightly fuzz job: builds the fuzz preset, runs every libFuzzer target for a time budget each, saves findings.
# Usage: fuzz/nightly.sh [SECONDS_PER_TARGET] [OUT_DIR]
# New inputs go to a scratch folder (listed first, so libFuzzer writes there); the checked-in corpus
# under corpus/fuzz/<target>/ is read after it. Crashes are saved under OUT_DIR/<target>/ before anything is reported;
# kernel_diff and kernel_diff_large also save each failing case as a case file under OUT_DIR/<target>/cases/.
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${1:-600}
out=${2:-fuzz-out}
scripts/install-deps
cmake --preset fuzz >/dev/null
cmake --build build-fuzz -j "$(nproc)"
status=0
for bin in build-fuzz/fuzz/*_fuzz; do
  name=$(basename "$bin")
  target=${name%_fuzz}
  scratch="$out/$target/scratch"
  crashes="$out/$target/crashes"
  mkdir -p "$scratch" "$crashes" "corpus/fuzz/$target"
  flags=()  # per-target libFuzzer options
  [ -f "fuzz/$target.dict" ] && flags=(-dict="fuzz/$target.dict")
  [ "$target" = case_parse ] && flags=(-dict=fuzz/case.dict)
  # kernel_diff: inputs as long as a whole case's choices from the start (docs/fuzzing.md: 150 s reached
  # 3999 edges this way against 3748 in 300 s with libFuzzer's slowly growing length limit).
  case $target in kernel_diff*) flags=(-len_control=0 -max_len=128) ;; esac
  echo "== $name for ${budget}s"
  # kernel_diff* save each failing case as a case file here before it aborts (replay: rpa run-case FILE --impl IMPL).
  if ! RPA_FUZZ_OUT="$out/$target/cases" "$bin" -max_total_time="$budget" -print_final_stats=1 -artifact_prefix="$crashes/" "${flags[@]}" \
       "$scratch" "corpus/fuzz/$target" 2>"$out/$target/log.txt"; then
    status=1
    echo "   FINDING: see $crashes/ and $out/$target/log.txt"
  fi
  grep -E "stat::number_of_executed_units|stat::average_exec_per_sec" "$out/$target/log.txt" | sed 's/^/   /' || true
done
exit $status
