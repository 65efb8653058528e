#!/usr/bin/env bash
# Installs dependencies, builds rexnlu and runs the main job: schema-guided extraction with the
# bundled default model (no network needed). This is the README's first command.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install_deps.sh"
# Only the CLI, without touching the test/bench options: scripts/test.sh shares this build folder.
BUILD_TARGET=rexnlu_cli "$root/scripts/build.sh" "$root/build"
cli="$root/build/apps/rexnlu"
echo
"$cli" info
echo
# Extraction on the bundled default model (models/rexnlu-demo-zh-small, trained on CLUENER's ten
# entity types among others): one text, readable view.
schema='{"人名": null, "地址": null, "书名": null, "公司": null, "游戏": null, "政府": null, "电影": null, "组织机构": null, "职位": null, "景点": null}'
"$cli" extract "我昨天在故宫博物院看了电影《流浪地球》，还去了上海外滩。" --schema "$schema"
echo
# The same engine over JSON lines (one JSON result per input line).
"$cli" extract <<JSON
{"text": "国务院总理李克强在北京会见了微软公司总裁比尔·盖茨。", "schema": $schema}
{"text": "浙商银行企业信贷部叶老桂博士则从另一个角度对五道门槛进行了解读。", "schema": $schema}
JSON
