#!/usr/bin/env bash
# Installs dependencies, builds rexnlu twice (optimized, and with ASan+UBSan) and runs every test
# in both builds, then the server and batcher tests once more under ThreadSanitizer (only that
# test program is built there), then runs every fuzz target for FUZZ_SECONDS (default 20) each
# (docs/fuzzing.md). This is the README's test command and what CI runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
stage() { echo "== $1 (at $(( $(date +%s) - start )) s)"; }  # where CI's time goes
"$root/scripts/install_deps.sh"

stage "optimized build"
# CUDA (when nvcc is there) for one architecture only: CI has no GPU, the code must compile.
"$root/scripts/build.sh" "$root/build" -DREXNLU_BUILD_TESTS=ON -DREXNLU_BUILD_BENCH=ON \
  -DREXNLU_TEST_PYPI_REFERENCES=ON -DCMAKE_CUDA_ARCHITECTURES=90
(cd "$root/build" && ctest --output-on-failure -j"$(nproc)")
if command -v nvcc > /dev/null; then
  stage "CUDA SASS check (ptxas 13.0 miscompile of session 10, tools/cuda_sass/check_vimnmx3.py)"
  sass_py=$("$root/scripts/python_env.sh" cuda-sass)
  nvdisasm=$(find "$(dirname "$(dirname "$sass_py")")" -name nvdisasm -type f | head -n 1)
  "$sass_py" "$root/tools/cuda_sass/check_vimnmx3.py" "$nvdisasm"
fi

# The sanitizer builds compile at -O1 with line tables only (-g1): every report still names file and
# line, and the ASan build takes about half the time of -O2 -g (docs/ci.md). The results must not
# depend on the optimisation level (e.g. whether the compiler fuses a * b + c): the optimized build
# above is -O3, these are -O1, and both pass the same tests.
sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")

stage "sanitizer build (AddressSanitizer + UndefinedBehaviorSanitizer)"
# Without CUDA: no GPU runs its code here, and the optimized build above already compiles it.
"$root/scripts/build.sh" "$root/build-asan" "${sanitizer_flags[@]}" -DREXNLU_SANITIZE=ON \
  -DREXNLU_BUILD_BENCH=OFF -DREXNLU_CUDA=OFF
(cd "$root/build-asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j"$(nproc)")

stage "ThreadSanitizer build (server and batcher tests: test_server only)"
BUILD_TARGET=test_server "$root/scripts/build.sh" "$root/build-tsan" "${sanitizer_flags[@]}" -DREXNLU_TSAN=ON \
  -DREXNLU_BUILD_BENCH=OFF -DREXNLU_CUDA=OFF
# One OpenMP thread: libgomp is not instrumented, so its own synchronisation would be reported.
(cd "$root/build-tsan" && OMP_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ./tests/server/test_server)

stage "fuzzing (libFuzzer + ASan + UBSan, clang; docs/fuzzing.md)"
"$root/scripts/fuzz.sh"
stage "all passed"
