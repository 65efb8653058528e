"""Shared helpers of the deployment tests: the programs under test, a small corpus, free ports.

Environment (set by tests/deploy/CMakeLists.txt): REXNLU_BIN (the rexnlu program of the build),
PYTHONPATH (the build's python/ with the rexnlu package). The tools (dask-scheduler, dask-worker,
haproxy) come from Debian (scripts/install_deps.sh); without one a test is skipped with a message,
except in CI ($CI set), where that is a failure.
"""
import os
import shutil
import socket
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI_DATA = os.path.join(ROOT, "tests", "data", "cli")
REXNLU_BIN = os.environ.get("REXNLU_BIN") or shutil.which("rexnlu")


def need(tool):
    """The path of an installed tool, or a skip (outside CI) / failure (in CI) naming what to install."""
    path = shutil.which(tool)
    if path:
        return path
    message = f"{tool} is not installed (Debian: scripts/install_deps.sh installs it)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def need_module(name):
    try:
        return __import__(name)
    except ImportError:
        message = f"python module {name} is missing (Debian: python3-distributed, scripts/install_deps.sh)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env():
    e = dict(os.environ)
    e["OMP_NUM_THREADS"] = "1"
    if REXNLU_BIN:
        e["REXNLU_BIN"] = REXNLU_BIN
    return e


def make_corpus(directory, lines_per_file=16):
    """Three request files from tests/data/cli (NER, ABSA, classification), the first with error
    lines (invalid JSON, an empty line, no schema) and the last without a final newline.
    Returns their paths."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for n, name in enumerate(["st_ner_dev.jsonl", "st_absa_dev.jsonl", "st_tc_single_label_dev.jsonl"]):
        with open(os.path.join(CLI_DATA, name), "rb") as f:
            lines = f.read().split(b"\n")[:lines_per_file]
        if n == 0:
            lines[2] = b'{"id": "bad", "text": '
            lines[6] = b""
            lines[11] = b'{"id": 12, "text": "no schema here"}'
        path = os.path.join(directory, name)
        with open(path, "wb") as f:
            f.write(b"\n".join(lines) + (b"" if n == 2 else b"\n"))
        paths.append(path)
    return paths


def reference(paths, directory):
    """rexnlu extract --input F --output REF for each file: the single-process run to equal."""
    os.makedirs(directory, exist_ok=True)
    out = {}
    for p in paths:
        ref = os.path.join(directory, os.path.basename(p))
        subprocess.run([REXNLU_BIN, "extract", "--threads", "1", "--input", p, "--output", ref], check=True, env=env())
        with open(ref, "rb") as f:
            out[os.path.basename(p)] = f.read()
    return out
