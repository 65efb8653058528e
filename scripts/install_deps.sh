#!/usr/bin/env bash
# Installs rexnlu's build and test dependencies from Debian's apt (Debian 12). Idempotent.
# Why each one: docs/dependencies.md. Python packages from PyPI (test and benchmark tools only) are
# installed on demand by scripts/python_env.sh into virtual environments, never here.
set -euo pipefail
packages=(
  build-essential cmake pkg-config       # compiler and build
  nlohmann-json3-dev                     # JSON: config.json, schemas, JSON lines, HTTP bodies
  libutf8proc-dev                        # Unicode categories and NFD for the BERT normalizer
  libdnnl-dev                            # fp32 matrix products (oneDNN sgemm; docs/benchmarks.md "BLAS choice")
  libopenblas-dev                        # alternative BLAS (-DREXNLU_BLAS=openblas) and the BLAS comparison bench
  zlib1g-dev                             # CRC-32 of zip entries in pytorch_model.bin
  libcli11-dev                           # command-line parsing
  libboost1.81-dev                       # HTTP service: Boost.Beast parser + Asio sockets (header-only)
  libcpp-httplib-dev                     # HTTP client of the server tests
  libgtest-dev libbenchmark-dev          # tests and micro-benchmarks
  clang libclang-rt-14-dev               # libFuzzer + sanitizers for the fuzz targets (docs/fuzzing.md)
  python3-numpy                          # regenerates the full-size random-weight test checkpoint
  python3-venv                           # scripts/python_env.sh: pinned PyPI tools (browser test, references)
  chromium                               # browser test of the web page (tests/browser), headless
  fonts-wqy-microhei                     # a CJK font, so the page's screenshots show Chinese text
  wrk                                    # HTTP load generator of bench/load_test.sh
  python3-dev pybind11-dev python3-pytest  # the Python package rexnlu (python/) and its tests (tests/python)
  python3-distributed haproxy            # rexnlu.dask on Dask, serve replicas behind HAProxy (tests/deploy, docs/deploy.md)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
