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
# Extraction on the bundled default model (models/rexnlu-demo-zh-small) with the schema and text of
# the official RexUniNLU example: one text, readable view.
schema='{"人物": null, "地理位置": null, "组织机构": null}'
"$cli" extract "马云于1999年在杭州创办了阿里巴巴集团。" --schema "$schema"
echo
# The same engine over JSON lines (one JSON result per input line); type names are free text.
"$cli" extract <<JSON
{"text": "国务院总理李克强在北京会见了微软公司总裁比尔·盖茨。", "schema": $schema}
{"text": "《流浪地球》在北京首映，导演郭帆出席。", "schema": {"人名": null, "电影": null, "地点": null}}
JSON
