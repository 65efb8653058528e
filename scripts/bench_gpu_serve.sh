#!/usr/bin/env bash
# GPU end to end and serving (docs/benchmarks.md "GPU end to end and serving", issue 13 items 5-7),
# one command on the GPU machine:
#   build  rexnlu with CUDA AND the HTTP server (Boost headers from BOOST_TAR: only the headers
#          src/server includes, header-only, nothing to link; dependencies from SYSROOT_TAR);
#   serve  `rexnlu serve` requests per second under a loopback load (bench/http_load.py, stdlib:
#          the GPU machine has no wrk) at concurrency 1 and 64, the bundled demo model and the
#          full-size random-weight model, --device cuda --precision fp16 and the CPU server (fp32)
#          on the same machine; /info and /metrics saved (GPU memory);
#   varied the demo model on the GPU (fp16) under the 100 different texts of
#          tests/data/cli/st_ner_dev.jsonl (schema of each line), each connection sending them in
#          turn (http_load.py --bodies): the server's batches mix lengths as in real use, unlike
#          serve's one repeated request; once per setting of VARIED_ENVS (space-separated
#          VAR=value settings of the server's environment, "-" for none; default "-");
#   oom    --workspace-limit-mb 1 on the GPU: a long text must get 503 + JSON, the service goes on;
#   e2e    the end-to-end NER call, text by text: the ORIGINAL pipeline's code on the GPU
#          (tools/compare_original/e2e_original.py, ORIG_DIR) vs `rexnlu bench --batch 1` on cuda
#          fp16 / fp32, same texts and schema, outputs compared (bench/e2e_compare.py);
#   eval   the demo model's `rexnlu eval` on the eval sets of docs/accuracy.md (EVAL_TAR: the
#          eval_*.jsonl of tools/train/convert_data.py) on cuda in each of EVAL_PRECISIONS
#          (default "fp16 fp32"; e.g. "fp16 bf16 fp32").
#
# EVAL_TIMEOUT (s, default 60) bounds each eval set.
#   SYSROOT_TAR=... BOOST_TAR=... EVAL_TAR=... ORIG_DIR=... OUT=dir scripts/bench_gpu_serve.sh
# PHASES (default "build serve varied oom e2e eval") picks phases; BUILD_DIR (default build-gpu-serve)
# may hold a finished build (then leave "build" out). DEVICE=cpu runs the GPU rows on the CPU (a
# dry run of the script on a machine without a GPU). DURATION (s, default 4) per load run.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${BUILD_DIR:-"$root/build-gpu-serve"}
out=$dir/res  # everything measured; packed into $OUT/results.tgz at the end when OUT is set
sr=${SYSROOT:-/tmp/sr}
dev=${DEVICE:-cuda}
duration=${DURATION:-4}
phases=${PHASES:-"build serve varied oom e2e eval"}
py=${PYTHON:-python3}
rm -rf "$out"; mkdir -p "$out" "$dir"
has() { [[ " $phases " == *" $1 "* ]]; }
echo "== commit ${REXNLU_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) cores"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi: no GPU"

# The full-size random-weight model (numpy), made while the build runs.
fs=$dir/fullsize
if has serve || has e2e; then
  if [ ! -f "$fs/model.safetensors" ]; then
    ( "$py" "$root/tools/compare_original/fullsize_case.py" "$fs" > "$dir/fullsize.log" 2>&1 &&
      cp "$root/models/rexuninlu_tiny/"{vocab.txt,tokenizer_config.json,special_tokens_map.json} "$fs/" ) &
    fs_pid=$!
  fi
fi

if has build; then
  start=$(date +%s)
  if [ -n "${SYSROOT_TAR:-}" ]; then mkdir -p "$sr" && tar xJf "$SYSROOT_TAR" -C "$sr"; fi
  if [ -n "${BOOST_TAR:-}" ]; then mkdir -p "$sr" && tar xJf "$BOOST_TAR" -C "$sr"; fi
  rm -rf "$sr/lib/cmake/GTest"
  export CPATH="$sr/include${CPATH:+:$CPATH}" LIBRARY_PATH="$sr/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$sr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PKG_CONFIG_PATH="$sr/lib/pkgconfig"
  boost_dir=$sr/lib/x86_64-linux-gnu/cmake/Boost-1.81.0
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$sr" -DREXNLU_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" -DREXNLU_SERVER=ON ${BOOST_TAR:+-DBoost_DIR="$boost_dir"} \
    -DREXNLU_BUILD_TESTS=OFF -DREXNLU_BUILD_BENCH=OFF > "$dir.configure.log" 2>&1 || { tail -40 "$dir.configure.log"; exit 1; }
  cmake --build "$dir" -j"$(nproc)" --target rexnlu_cli > "$dir.build.log" 2>&1 || { grep -E "error" "$dir.build.log" | head -40; exit 1; }
  echo "== build (rexnlu_cli with the server) took $(($(date +%s) - start)) s"
fi
export LD_LIBRARY_PATH="$sr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
rexnlu=$dir/apps/rexnlu
[ -x "$rexnlu" ] || { echo "no $rexnlu" >&2; exit 1; }
[ -n "${fs_pid:-}" ] && { wait "$fs_pid" || { cat "$dir/fullsize.log"; exit 1; }; }
demo=$root/models/rexnlu-demo-zh-small
fails=0

# shellcheck source=bench/serve_port.sh
source "$root/bench/serve_port.sh"
cat > "$dir/body.json" <<'JSON'
{"text": "1944年毕业于北大的名古屋铁道会长谷口清太郎等人在日本积极筹资，共筹款2.7亿日元，参加捐款的日本企业有69家。", "schema": {"人物": null, "地理位置": null, "组织机构": null}}
JSON
"$py" -c "import json; print(json.dumps({'text': '北大西洋议会春季会议26日在西班牙巴塞罗那闭幕。' * 40, 'schema': {'人物': None, '地理位置': None, '组织机构': None}}, ensure_ascii=False))" > "$dir/long.json"

start_server_env() {  # start_server_env TAG [VAR=value...] -- ARGS...: sets pid, port
  local tag=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$rexnlu" serve --port 0 --no-access-log "$@" > "$dir/serve_$tag.out" 2> "$out/serve_$tag.err" &
  pid=$!
  port=$(serve_port "$dir/serve_$tag.out")
  if [ -z "$port" ]; then echo "   $tag: the server did not become healthy"; tail -5 "$out/serve_$tag.err"; kill "$pid" 2>/dev/null; return 1; fi
}
start_server() {  # start_server TAG ARGS...: sets pid, port
  local tag=$1; shift
  start_server_env "$tag" -- "$@"
}
stop_server() { kill -TERM "$pid"; wait "$pid" || echo "   rexnlu serve exited with $?"; }
# One table row of an http_load.py result: "| LABEL | concurrency | answers | QPS | p50 | p95 | p99 |
# statuses | socket errors |", and the first non-200 answer if there was one.
load_row() {  # load_row LABEL JSON
  "$py" -c "import json,sys; r=json.loads(sys.argv[2]); print('| %s | %d | %d | %.1f | %.2f | %.2f | %.2f | %s | %d |' % (sys.argv[1], r['concurrency'], r['requests'], r['ok_qps'], r['p50_ms'], r['p95_ms'], r['p99_ms'], r['statuses'], r['socket_errors'])); r['first_error'] and print('   first non-200 answer:', r['first_error'][:200])" "$1" "$2"
}

if has serve; then
  echo "== serve: loopback load, ${duration} s per run after 1 s of the same load (bench/http_load.py)"
  echo "| model | device precision | serve options | concurrency | answers | QPS (200s) | p50 ms | p95 ms | p99 ms | statuses | socket errors |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for model in demo fullsize; do
    mdir=$demo; [ "$model" = fullsize ] && mdir=$fs
    for setup in "$dev fp16|" "$dev fp16|--token-budget 16384" "cpu fp32|"; do
      dp=${setup%%|*}; extra=${setup#*|}
      [ "$dev" = cpu ] && [ "$dp" = "cpu fp16" ] && dp="cpu fp32"
      set -- $dp
      tag="${model}_$1_$2${extra:+_tb}"
      # shellcheck disable=SC2086
      start_server "$tag" --model "$mdir" --device "$1" --precision "$2" $extra || { fails=$((fails + 1)); continue; }
      curl -s -H 'Content-Type: application/json' --data-binary @"$dir/body.json" "http://127.0.0.1:$port/v1/extract" > "$out/answer_$tag.json"
      concs="1 64"; [ -n "$extra" ] && concs=64
      for c in $concs; do
        r=$("$py" "$root/bench/http_load.py" --port "$port" --body "$dir/body.json" --concurrency "$c" --duration "$duration" --warmup 1)
        echo "$r" >> "$out/serve_runs.jsonl"
        load_row "$model | $1 $2 | ${extra:-default}" "$r"
      done
      curl -s "http://127.0.0.1:$port/info" > "$out/info_$tag.json"
      curl -s "http://127.0.0.1:$port/metrics" > "$out/metrics_$tag.txt"
      stop_server
    done
  done
  for f in "$out"/info_*_"$dev"_fp16.json; do echo "-- $(basename "$f"): $("$py" -c "import json,sys; i=json.load(open(sys.argv[1])); print(i['model'].get('backend'), i.get('gpu_memory'))" "$f")"; done
  for f in "$out"/metrics_*_"$dev"_fp16.txt; do echo "-- $(basename "$f"):"; grep -E "^rexnlu_gpu_memory" "$f" || echo "   (no rexnlu_gpu_memory lines)"; done
fi

if has varied; then
  "$py" - "$root/tests/data/cli/st_ner_dev.jsonl" "$dir/bodies.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w", encoding="utf-8") as f:
    for line in open(sys.argv[1], encoding="utf-8"):
        c = json.loads(line)
        f.write(json.dumps({"text": c["text"], "schema": c["schema"]}, ensure_ascii=False) + "\n")
PY
  vp=fp16; [ "$dev" = cpu ] && vp=fp32
  echo "== varied: the demo model, $dev $vp, the 100 texts of st_ner_dev.jsonl in turn, ${duration} s per run after 1 s"
  echo "| server environment | concurrency | answers | QPS (200s) | p50 ms | p95 ms | p99 ms | statuses | socket errors |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for setting in ${VARIED_ENVS:--}; do
    envs=(); [ "$setting" != - ] && envs=("$setting")
    tag="varied_${setting//[^A-Za-z0-9_]/_}"
    start_server_env "$tag" "${envs[@]}" -- --model "$demo" --device "$dev" --precision "$vp" || { fails=$((fails + 1)); continue; }
    for c in 1 64; do
      r=$("$py" "$root/bench/http_load.py" --port "$port" --bodies "$dir/bodies.jsonl" --concurrency "$c" --duration "$duration" --warmup 1)
      echo "$r" >> "$out/varied_runs.jsonl"
      load_row "$setting" "$r"
    done
    stop_server
  done
fi

if has oom; then
  echo "== oom: --workspace-limit-mb 1 on $dev fp16"
  if start_server oom --model "$demo" --device "$dev" --precision fp16 --workspace-limit-mb 1; then
    for body in long.json long.json body.json; do
      echo "   $body -> $(curl -s -w ' HTTP %{http_code}' -H 'Content-Type: application/json' --data-binary @"$dir/$body" "http://127.0.0.1:$port/v1/extract" | head -c 400)"
    done
    echo "   /health -> $(curl -s -w ' HTTP %{http_code}' "http://127.0.0.1:$port/health")"
    curl -s "http://127.0.0.1:$port/metrics" | grep -E "^rexnlu_(requests|responses|gpu_memory)[a-z_]*\{?.*(503|500|held)" | head -8
    stop_server
  else fails=$((fails + 1)); fi
fi

if has e2e; then
  echo "== e2e: the NER call text by text (16 sample_tasks ner dev texts, schema 人物/地理位置/组织机构)"
  head -16 "$root/tests/data/cli/st_ner_dev.jsonl" > "$dir/ner16.jsonl"
  head -4 "$root/tests/data/cli/st_ner_dev.jsonl" > "$dir/ner4.jsonl"
  for model in demo fullsize; do
    mdir=$demo texts=$dir/ner16.jsonl rounds=3
    [ "$model" = fullsize ] && mdir=$fs texts=$dir/ner4.jsonl rounds=1
    for p in fp16 fp32; do
      "$rexnlu" bench --model "$mdir" --device "$dev" --precision "$p" --texts "$texts" --n $((rounds * $(wc -l < "$texts"))) --warmup 3 --json > "$out/e2e_rexnlu_${model}_$p.json" 2>&1
      "$py" -c "import json,sys; b=json.load(open(sys.argv[1])); print('   rexnlu %s %s %s: %d calls, p50 %.3f ms, mean %.3f ms, paths %s' % (sys.argv[2], sys.argv[3], sys.argv[4], b['requests'], b['latency_ms']['p50'], b['latency_ms']['mean'], b.get('paths')))" "$out/e2e_rexnlu_${model}_$p.json" "$model" "$dev" "$p" || { cat "$out/e2e_rexnlu_${model}_$p.json"; fails=$((fails + 1)); }
      "$rexnlu" extract --model "$mdir" --device "$dev" --precision "$p" --input "$texts" > "$dir/e2e_rexnlu_${model}_$p.jsonl" 2> /dev/null
    done
    if [ -n "${ORIG_DIR:-}" ]; then
      for ac in none fp16; do
        [ "$model" = fullsize ] && [ "$ac" = fp16 ] && continue
        autocast=(); [ "$ac" = fp16 ] && autocast=(--autocast fp16)
        PYTHONUNBUFFERED=1 "$py" "$root/tools/compare_original/e2e_original.py" "$ORIG_DIR" "$mdir" "$texts" "$dir/e2e_original_${model}_$ac.jsonl" \
          --device "$dev" --rounds "$rounds" --warmup 3 "${autocast[@]}" > "$out/e2e_original_${model}_$ac.txt" 2>&1
        tail -1 "$out/e2e_original_${model}_$ac.txt"
      done
      for p in fp16 fp32; do
        echo "   $model: original (fp32) vs rexnlu $p: $("$py" "$root/bench/e2e_compare.py" "$dir/e2e_original_${model}_none.jsonl" "$dir/e2e_rexnlu_${model}_$p.jsonl" 2>&1)"
      done
      [ -f "$dir/e2e_original_${model}_fp16.jsonl" ] && echo "   $model: original fp32 vs original autocast fp16: $("$py" "$root/bench/e2e_compare.py" "$dir/e2e_original_${model}_none.jsonl" "$dir/e2e_original_${model}_fp16.jsonl" 2>&1)"
    fi
  done
fi

if has eval && [ -n "${EVAL_TAR:-}" ]; then
  eval_precisions=${EVAL_PRECISIONS:-"fp16 fp32"}
  echo "== eval: demo model, $dev ${eval_precisions// / and } at the same time (a process each), every set"
  mkdir -p "$dir/eval_data" && tar xJf "$EVAL_TAR" -C "$dir/eval_data"
  start=$(date +%s)
  reports=()  # one directory of reports per precision, a column each in the summary
  for p in $eval_precisions; do
    report=$out/eval_${dev}_$p
    reports+=("$report")
    (
      mkdir -p "$report"
      for f in "$dir"/eval_data/eval_*.jsonl; do
        n=$(basename "$f" .jsonl); n=${n#eval_}
        match=offsets; [ "$n" = duie_dev ] && match=text
        timeout "${EVAL_TIMEOUT:-60}" "$rexnlu" eval --model "$demo" --device "$dev" --precision "$p" --data "$f" --match "$match" --batch-size 64 --json --no-progress \
          > "$report/$n.json" 2> "$dir/eval_${p}_$n.err" || echo "   eval $n $p failed: $(tail -2 "$dir/eval_${p}_$n.err")"
      done
    ) &
  done
  wait
  echo "   took $(($(date +%s) - start)) s"
  "$py" "$root/bench/eval_summary.py" "${reports[@]}"
fi
cp "$dir"/e2e_*.jsonl "$out/" 2>/dev/null
[ -n "${OUT:-}" ] && tar czf "$OUT/results.tgz" -C "$dir" res
echo "== $fails failure(s), $(date -u '+%H:%M:%S UTC')"
exit $((fails > 0))
