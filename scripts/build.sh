#!/usr/bin/env bash
# Configures and builds rexnlu into a build directory: scripts/build.sh [DIR] [extra cmake args...]
# BUILD_TARGET=name builds that target only (default: everything the configuration enables).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-"$root/build"}; shift || true
cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)" ${BUILD_TARGET:+--target "$BUILD_TARGET"}
