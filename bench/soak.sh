#!/usr/bin/env bash
# Bounded soak of `rexnlu serve` (not in CI; docs/benchmarks.md, "Soak"): starts the service on the
# bundled model on 127.0.0.1 and runs bench/soak.py against it for SOAK_SECONDS (default 1800):
# a mix of valid extract requests (several task shapes), invalid JSON, malformed schemas, bad
# thresholds, oversized / chunked over-limit / gzip / deeply nested bodies, header floods,
# pipelined requests, wrong methods, foreign Host/Origin, protocol garbage, clients that go away
# mid-body or mid-extraction, and slow-loris connections; the server's RSS is sampled every
# SOAK_SAMPLE_S seconds. Prints counts per kind and status, every unexpected outcome and RSS
# first/median/max/last and per tenth of the run; exits non-zero on a crash (2), an unexpected status
# or reset (1), RSS growth past SOAK_RSS_GROWTH_MB (median of the last quarter of the samples minus
# that of the second quarter; the first quarter is warm-up) (3), or a SIGTERM that does not end the
# server cleanly (4).
#
#   [SOAK_SECONDS=1800] [SOAK_WORKERS=4] [SOAK_PAUSE_MS=0] [SOAK_SLOWLORIS=2] [SOAK_RSS_GROWTH_MB=16]
#   [SERVE_ARGS="--threads 8"] bench/soak.sh [BUILD_DIR]
# Python: the Debian python3 standard library only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/serve_port.sh
source "$root/bench/serve_port.sh"
build=${1:-$root/build}
binary=$build/apps/rexnlu
work=$build/soak
mkdir -p "$work"
[ -x "$binary" ] || { echo "no $binary: build first (scripts/build.sh $build)" >&2; exit 1; }

# shellcheck disable=SC2086  # SERVE_ARGS: extra `rexnlu serve` options, word-split on purpose
"$binary" serve --host 127.0.0.1 --port 0 --model "$root/models/rexnlu-demo-zh-small" ${SERVE_ARGS:-} \
  > "$work/serve.out" 2> "$work/serve.err" &
pid=$!
trap 'kill -TERM $pid 2> /dev/null || true' EXIT
port=$(serve_port "$work/serve.out")
[ -n "$port" ] || { echo "rexnlu serve did not become healthy: $work/serve.err" >&2; exit 1; }
echo "soak: rexnlu serve pid $pid on 127.0.0.1:$port, $(git -C "$root" rev-parse --short HEAD), $(date -u '+%F %T') UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
rc=0
python3 "$root/bench/soak.py" --port "$port" --pid "$pid" --seconds "${SOAK_SECONDS:-1800}" \
  --workers "${SOAK_WORKERS:-4}" --pause-ms "${SOAK_PAUSE_MS:-0}" --slowloris "${SOAK_SLOWLORIS:-2}" \
  --sample-seconds "${SOAK_SAMPLE_S:-5}" --rss-growth-mb "${SOAK_RSS_GROWTH_MB:-16}" \
  --rss-log "$work/rss.log" || rc=$?
echo "soak: 5xx lines on the server's stderr: $(grep -c ' error: 5' "$work/serve.err" || true) (heavy requests may get 504)"
if kill -0 "$pid" 2> /dev/null; then
  kill -TERM "$pid"
  start=$(date +%s)
  if wait "$pid"; then
    echo "soak: SIGTERM -> exit 0 in $(( $(date +%s) - start )) s"
  else
    echo "soak: FAIL: rexnlu serve exited with $? after SIGTERM"; rc=${rc/#0/4}
  fi
fi
trap - EXIT
echo "soak: load at the end $(cut -d' ' -f1-3 /proc/loadavg); logs in $work"
exit "$rc"
