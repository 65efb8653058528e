"""Shared fixtures: the tiny model of the fixture cases and the bundled demo model."""
import json
import os

import pytest

import rexnlu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY_MODEL = os.path.join(ROOT, "models", "rexuninlu_tiny")
DEMO_MODEL = os.path.join(ROOT, "models", "rexnlu-demo-zh-small")
E2E_CASES = os.path.join(ROOT, "tests", "data", "rexuninlu_tiny", "e2e_cases.jsonl")


def read_cases():
    with open(E2E_CASES, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="session")
def cases():
    return read_cases()


@pytest.fixture(scope="session")
def tiny():
    """The original's tiny model, with the original's output (no de-duplication)."""
    return rexnlu.pipeline("rex-uninlu", model=TINY_MODEL, dedup=False)


@pytest.fixture(scope="session")
def demo():
    return rexnlu.pipeline("rex-uninlu", model=DEMO_MODEL)
