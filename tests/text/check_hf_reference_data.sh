#!/usr/bin/env bash
# ctest hf_reference_data_reproduces: reruns tests/text/make_hf_cases.py with HF tokenizers from
# PyPI (0.23.2 and 0.13.3, in the pinned environments of scripts/python_env.sh, created on the first
# run) and checks that it writes the committed tests/data/text/hf_rule_cases.jsonl and
# hf_char_table.txt byte for byte.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python=$("$root/scripts/python_env.sh" hf-tokenizers)
"$python" "$root/tests/text/make_hf_cases.py" > "$out/hf_rule_cases.jsonl"
"$python" "$root/tests/text/make_hf_cases.py" --char-table > "$out/hf_char_table.txt"
status=0
for f in hf_rule_cases.jsonl hf_char_table.txt; do
  cmp "$out/$f" "$root/tests/data/text/$f" || status=1
done
[ "$status" = 0 ] && echo "hf_reference_data_reproduces: both files reproduced byte for byte"
exit "$status"
