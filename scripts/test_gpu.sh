#!/usr/bin/env bash
# Builds the CUDA kernel tests for one architecture (CUDA_ARCH, default 90 = H100/H200) and runs
# them on this machine's GPU: scripts/test_gpu.sh [gtest args...]. Meant for the GPU machine,
# which has cmake and nvcc but not rexnlu's apt dependencies: it builds the standalone project
# tests/cuda/device (CUDA kernels + the CPU kernels they are compared with + tests/cuda).
# GoogleTest comes from the system or from GTEST_DIR (include/ + lib/libgtest*.a).
# Through the device tool (it sends the session's checkout): copy Debian's GoogleTest into a
# git-ignored folder first,
#   mkdir -p .device/gtest/include .device/gtest/lib && cp -r /usr/include/gtest .device/gtest/include/
#   cp /usr/lib/x86_64-linux-gnu/libgtest.a /usr/lib/x86_64-linux-gnu/libgtest_main.a .device/gtest/lib/
# then run  GTEST_DIR=$PWD/.device/gtest scripts/test_gpu.sh  with carry [".device/gtest"]
# (about 25 s of build and 5 s of tests on the H200; bench: build-gpu/tests/bench_kernels_cuda).
# Without a GPU every comparison prints SKIPPED with the reason. REXNLU_COMMIT names the commit
# when the tree is a copy without .git (the device tool sends one).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${BUILD_DIR:-"$root/build-gpu"}
echo "== commit ${REXNLU_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}, $(date -u '+%Y-%m-%d %H:%M UTC')"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi: no GPU"
nvcc --version | tail -2
start=$(date +%s)
cmake -S "$root/tests/cuda/device" -B "$dir" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" ${GTEST_DIR:+-DGTEST_DIR="$GTEST_DIR"} >/dev/null
cmake --build "$dir" -j"$(nproc)"
echo "== build took $(($(date +%s) - start)) s"
"$dir/tests/test_kernels_cuda" "$@"
