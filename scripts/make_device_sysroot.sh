#!/usr/bin/env bash
# Packs the build dependencies the GPU machine lacks (it has cmake, nvcc, g++ and CUDA but none of
# Debian's -dev packages) from this machine's Debian packages (scripts/install_deps.sh) into one
# tarball, unpacked there by scripts/test_gpu_engine.sh and bench/cpu_bench_on_gpu_host.sh
# (SYSROOT_TAR=...): oneDNN (with libOpenCL, which it NEEDs), nlohmann_json, utf8proc, CLI11, zlib,
# GoogleTest. Layout: P/include, P/lib (shared and static libraries, CMake packages under
# P/lib/cmake and P/share/cmake). No Boost: scripts/make_boost_headers_tar.sh packs that apart.
#   scripts/make_device_sysroot.sh [OUT.tar.xz]     (default .device/sysroot.tar.xz, git-ignored)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/.device/sysroot.tar.xz}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
p=$tmp/p lib=/usr/lib/x86_64-linux-gnu
mkdir -p "$p/include" "$p/lib/cmake" "$p/share/cmake"
cd /usr/include
cp -a dnnl*.h dnnl*.hpp oneapi nlohmann CLI gtest gmock utf8proc.h zlib.h zconf.h "$p/include/"
cp -a "$lib"/libdnnl.so* "$lib"/libOpenCL.so* "$lib"/libutf8proc.so* "$lib"/libutf8proc.a \
  "$lib"/libz.so* "$lib"/libz.a "$lib"/libgtest*.a "$lib"/libgmock*.a "$p/lib/"
cp -a /lib/x86_64-linux-gnu/libz.so.1* "$p/lib/" 2>/dev/null || true
cp -a "$lib/cmake/GTest" "$p/lib/cmake/"   # (CMakeLists finds oneDNN with find_library)
cp -a /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 "$p/share/cmake/"
# utf8proc is found with pkg-config: its .pc file, relocated to wherever the sysroot is unpacked.
mkdir -p "$p/lib/pkgconfig"
sed -e 's|^prefix=.*|prefix=${pcfiledir}/../..|' -e 's|^libdir=.*|libdir=${prefix}/lib|' \
  "$lib/pkgconfig/libutf8proc.pc" > "$p/lib/pkgconfig/libutf8proc.pc"
for f in "$lib"/libdnnl.so.* "$lib"/libutf8proc.so.*; do test -e "$f"; done
mkdir -p "$(dirname "$out")"
tar cJf "$out" -C "$p" .
echo "$out: $(du -h "$out" | cut -f1)"
