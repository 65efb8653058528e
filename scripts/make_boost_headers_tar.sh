#!/usr/bin/env bash
# Packs the Boost headers the HTTP server (src/server, apps) includes, and Boost's CMake package
# files, from this machine's Debian libboost1.81-dev into a small tarball for machines without
# Boost (the GPU machine: scripts/bench_gpu_serve.sh, BOOST_TAR=...). Only headers: the server
# uses Beast and Asio header-only, nothing to link (Boost::headers is an INTERFACE target).
#   scripts/make_boost_headers_tar.sh [OUT.tar.xz]     (default .device/boost_headers.tar.xz, git-ignored)
# The header list is what g++ -M reports for every src/server and apps source (C++17 and C++20,
# with and without NDEBUG), plus all of boost/config, system, date_time and predef (their
# compiler- and platform-dependent includes). Unpacked into a prefix P, CMake finds it with
# -DBoost_DIR=P/lib/x86_64-linux-gnu/cmake/Boost-1.81.0 (include dir = P/include).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/.device/boost_headers.tar.xz}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
for std in c++20 c++17; do
  for defs in "" "-DNDEBUG -O2"; do
    for f in src/server/*.cpp apps/*.cpp; do
      # shellcheck disable=SC2086
      g++ -std=$std $defs -pthread -M -Iinclude -Isrc "$f"
    done
  done
done | tr ' \\' '\n\n' | grep '^/usr/include/boost' | xargs -n1 realpath | sort -u > "$tmp/list"
mkdir -p "$tmp/p/include" "$tmp/p/lib/x86_64-linux-gnu/cmake"
(cd /usr/include && { sed 's|^/usr/include/||' "$tmp/list"; find boost/config boost/system boost/date_time boost/predef* -type f 2>/dev/null; } |
  sort -u | tar cf - -T -) | tar xf - -C "$tmp/p/include"
cp -r /usr/lib/x86_64-linux-gnu/cmake/Boost-1.81.0 /usr/lib/x86_64-linux-gnu/cmake/boost_headers-1.81.0 "$tmp/p/lib/x86_64-linux-gnu/cmake/"
# Check: every Boost header the sources include resolves inside the package.
for f in src/server/*.cpp apps/*.cpp; do g++ -std=c++20 -M -isystem "$tmp/p/include" -Iinclude -Isrc "$f"; done |
  tr ' \\' '\n\n' | grep boost | grep -v "^$tmp/p/" && { echo "headers missing from the package (above)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
tar cJf "$out" -C "$tmp/p" .
echo "$out: $(wc -l < "$tmp/list") headers from g++ -M, $(du -b "$out" | cut -f1) bytes"
