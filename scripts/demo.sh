#!/usr/bin/env bash
# Installs dependencies, builds rexnlu and runs the main job: schema-guided extraction with the
# bundled default model (no network needed). This is the README's first command.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install_deps.sh"
"$root/scripts/build.sh" "$root/build" -DREXNLU_BUILD_TESTS=OFF -DREXNLU_BUILD_BENCH=OFF
cli="$root/build/apps/rexnlu"
echo
"$cli" info
echo
# Extraction on the bundled default model (models/rexnlu-demo-zh-small): one text, readable view.
"$cli" extract "我昨天在故宫博物院看了电影《流浪地球》，还去了上海外滩。" \
  --schema '{"人名": null, "地址": null, "电影": null, "景点": null, "公司": null}'
echo
# The same engine over JSON lines (one JSON result per input line).
"$cli" extract <<'JSON'
{"text": "国务院总理李克强在北京会见了微软公司总裁比尔·盖茨。", "schema": {"人名": null, "地址": null, "公司": null, "职位": null, "政府": null}}
{"task": "ner", "text": "浙商银行企业信贷部叶老桂博士则从另一个角度对五道门槛进行了解读。", "labels": ["人名", "公司", "职位"]}
JSON
