"""The original implementation's end-to-end cases (tests/data/rexuninlu_tiny/e2e_cases.jsonl,
as tests/uie/test_parity.cpp runs them) through the Python call give exactly `expected`."""
import json

import pytest

from conftest import read_cases

# Cases whose smallest |logit| is >= 1e-3: float rounding cannot flip a link (the C++ test's rule).
STRICT = [c for c in read_cases() if c["min_abs_logit"] >= 1e-3]


def case_options(case):
    return {k: v for k, v in (case.get("options") or {}).items()}


@pytest.mark.parametrize("case", STRICT, ids=[c["id"] for c in STRICT])
def test_case_gives_expected(tiny, case):
    result = tiny(input=case["text"], schema=case["schema"], **case_options(case))
    assert result == {"output": case["expected"]}


def test_schema_as_json_string_and_positional_input(tiny):
    case = STRICT[0]
    as_string = tiny(case["text"], schema=json.dumps(case["schema"], ensure_ascii=False), **case_options(case))
    assert as_string == {"output": case["expected"]}


def test_a_list_is_one_batched_call_equal_to_one_by_one(tiny):
    # Cases with the same options in one list: one engine call (fewer forwards than one by one).
    same = [c for c in STRICT if not c.get("options")]
    by_schema = {}
    for c in same:
        by_schema.setdefault(json.dumps(c["schema"], ensure_ascii=False), []).append(c)
    schema, group = max(by_schema.items(), key=lambda kv: len(kv[1]))
    assert len(group) >= 2
    before = tiny.engine.forward_calls
    batched = tiny([c["text"] for c in group], schema=schema)
    batched_calls = tiny.engine.forward_calls - before
    one_by_one = [tiny(c["text"], schema=schema) for c in group]
    assert batched == one_by_one == [{"output": c["expected"]} for c in group]
    assert batched_calls < tiny.engine.forward_calls - before - batched_calls


def test_engine_extract_batch_with_a_schema_per_text(tiny):
    group = [c for c in STRICT if not c.get("options")][:8]
    assert len({json.dumps(c["schema"]) for c in group}) >= 2
    results = tiny.engine.extract_batch([c["text"] for c in group], [c["schema"] for c in group],
                                        dedup=False, probabilities=False)
    assert results == [{"output": c["expected"]} for c in group]
