"""SiameseUIE through the ModelScope-style call: the original's end-to-end cases of the tiny
SiameseUIE model (tests/data/siamese_uie_tiny/e2e_cases.jsonl, as tests/siamese_uie runs them) give
exactly `expected`; the task must match the family of the directory."""
import json
import os

import pytest

import rexnlu
from conftest import ROOT, TINY_MODEL

SIAMESE_MODEL = os.path.join(ROOT, "tests", "data", "siamese_uie_tiny")


def light_cases():
    """The cases with few output paths (the heavy event cases run in the C++ test only)."""
    with open(os.path.join(SIAMESE_MODEL, "e2e_cases.jsonl"), encoding="utf-8") as f:
        cases = [json.loads(line) for line in f if line.strip()]
    return [c for c in cases if not (len(c["schema"]) > 10 and c["expected"])]


CASES = light_cases()


@pytest.fixture(scope="module")
def siamese():
    return rexnlu.pipeline("siamese-uie", model=SIAMESE_MODEL, dedup=False)


def test_there_are_cases():
    assert len(CASES) == 25


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case_gives_expected(siamese, case):
    assert siamese(input=case["text"], schema=case["schema"]) == {"output": case["expected"]}


def test_family_is_named_and_checked(siamese):
    assert siamese.engine.info()["family"] == "siamese-uie"
    with pytest.raises(ValueError, match="rex-uninlu"):
        rexnlu.pipeline("rex-uninlu", model=SIAMESE_MODEL)
    with pytest.raises(ValueError, match="siamese-uie"):
        rexnlu.pipeline("siamese-uie", model=TINY_MODEL)
