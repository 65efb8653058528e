#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang++, ASan + UBSan) into build-fuzz/ and runs each one
# for FUZZ_SECONDS seconds (default 20) from its seed corpus in fuzz/corpus/<target>/. Fails on the
# first crash, sanitizer report, leak, timeout (FUZZ_TIMEOUT s per input, default 10) or input using
# more than 2 GB; the input that did it is left in build-fuzz/artifacts/.
#   scripts/fuzz.sh                  every target (CI: called at the end of scripts/test.sh)
#   scripts/fuzz.sh config schema    only these
#   FUZZ_SECONDS=3600 scripts/fuzz.sh pickle_reader    longer runs: docs/fuzzing.md
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${FUZZ_BUILD_DIR:-"$root/build-fuzz"}
seconds=${FUZZ_SECONDS:-20}
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi

start=$(date +%s)
# -O1 with line tables: quick to compile, stack traces with lines.
cmake -S "$root" -B "$dir" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" -DREXNLU_FUZZ=ON \
  -DREXNLU_BUILD_TESTS=OFF -DREXNLU_BUILD_BENCH=OFF -DREXNLU_CUDA=OFF "${launcher[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)" --target fuzzers
echo "fuzz build: $(( $(date +%s) - start )) s"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for seeds in "$root"/fuzz/corpus/*/; do targets+=("$(basename "$seeds")"); done
fi
mkdir -p "$dir/artifacts" "$dir/logs"
failed=()
for t in "${targets[@]}"; do
  [ -x "$dir/fuzz/fuzz_$t" ] || { echo "no fuzz target '$t' (fuzz/CMakeLists.txt)"; exit 2; }
  dict=()
  if [ -f "$root/fuzz/dict/$t.dict" ]; then dict=(-dict="$root/fuzz/dict/$t.dict"); fi
  mkdir -p "$dir/corpus/$t"  # new inputs go here; the committed seeds stay as they are
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     "$dir/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 \
       -artifact_prefix="$dir/artifacts/$t-" -print_final_stats=1 "${dict[@]}" \
       "$dir/corpus/$t" "$root/fuzz/corpus/$t" >"$dir/logs/$t.log" 2>&1; then
    runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$dir/logs/$t.log" | grep -o '[0-9]*$' || echo "?")
    echo "fuzz_$t: ok, $runs inputs in ${seconds} s"
  else
    echo "fuzz_$t: FAILED (log: $dir/logs/$t.log)"
    grep -E -m20 'ERROR|SUMMARY|runtime error|Test unit written|==[0-9]+==' "$dir/logs/$t.log" || tail -30 "$dir/logs/$t.log"
    failed+=("$t")
  fi
done
echo "fuzzing: build and ${#targets[@]} targets in $(( $(date +%s) - start )) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz targets that failed: ${failed[*]}"
  exit 1
fi
