#!/usr/bin/env python3
"""Throughput of rexnlu.dask with 1 and 2 worker processes against the plain `rexnlu extract`.

    PYTHONPATH=build/python /usr/bin/python3 bench/dask_scaling.py --rexnlu build/apps/rexnlu [--copies 2]

Corpus: tests/data/cli/*.jsonl (NER, ABSA, classification; 100 lines each) repeated --copies
times into a temporary directory. Every rexnlu process computes with ONE thread (--threads 1,
OMP_NUM_THREADS=1), each Dask worker runs one task at a time (threads_per_worker=1), so 2 workers
use at most 2 cores. Each run's output is compared byte for byte with the plain CLI's. Prints a
Markdown table: wall seconds of the whole command (cluster start included), the job alone
(rexnlu.dask's own clock), lines/s, and the load average before and after (the machine is shared).
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rexnlu", default=shutil.which("rexnlu"), help="the rexnlu program")
    ap.add_argument("--copies", type=int, default=2, help="times each test file is repeated")
    ap.add_argument("--partition-lines", type=int, default=64)
    ap.add_argument("--workers", default="1,2", help="worker process counts to run")
    a = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    tmp = tempfile.mkdtemp(prefix="rexnlu-dask-bench-")
    try:
        corpus = os.path.join(tmp, "in")
        os.makedirs(corpus)
        lines = 0
        for path in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "cli", "*.jsonl"))):
            with open(path, "rb") as f:
                data = f.read()
            with open(os.path.join(corpus, os.path.basename(path)), "wb") as f:
                f.write(data * a.copies)
            lines += data.count(b"\n") * a.copies
        rows = []

        # The plain CLI, one process per file, one after the other: the single-process baseline.
        ref = os.path.join(tmp, "ref")
        os.makedirs(ref)
        before, t0 = loadavg(), time.monotonic()
        for path in sorted(glob.glob(os.path.join(corpus, "*.jsonl"))):
            subprocess.run([a.rexnlu, "extract", "--threads", "1", "--input", path, "--output",
                            os.path.join(ref, os.path.basename(path))], check=True, env=env)
        wall = time.monotonic() - t0
        rows.append(("rexnlu extract (plain CLI, 1 process)", wall, wall, lines / wall, before, loadavg()))

        for workers in [int(w) for w in a.workers.split(",")]:
            out = os.path.join(tmp, f"out{workers}")
            before, t0 = loadavg(), time.monotonic()
            p = subprocess.run([sys.executable, "-m", "rexnlu.dask", "--workers", str(workers), "--input",
                                os.path.join(corpus, "*.jsonl"), "--output", out, "--rexnlu", a.rexnlu,
                                "--partition-lines", str(a.partition_lines), "--no-progress", "--", "--threads", "1"],
                               env=env, stderr=subprocess.PIPE, text=True)
            wall = time.monotonic() - t0
            if p.returncode != 0:
                sys.exit(p.stderr)
            stats = json.loads(p.stderr.strip().splitlines()[-1])
            for name in os.listdir(ref):
                with open(os.path.join(ref, name), "rb") as f1, open(os.path.join(out, name), "rb") as f2:
                    if f1.read() != f2.read():
                        sys.exit(f"{name}: rexnlu.dask output differs from rexnlu extract")
            rows.append((f"rexnlu.dask, LocalCluster, {workers} worker process{'es' if workers > 1 else ''}",
                         wall, stats["seconds"], lines / stats["seconds"], before, loadavg()))

        print(f"{lines} lines, {a.copies} copies of tests/data/cli/*.jsonl, --partition-lines {a.partition_lines}, "
              f"--threads 1 per rexnlu process, {os.cpu_count()} cores; outputs equal byte for byte\n")
        print("| run | wall s (all) | job s | lines/s (job) | load before | load after |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name, wall, job, rate, l0, l1 in rows:
            print(f"| {name} | {wall:.1f} | {job:.1f} | {rate:.1f} | {l0} | {l1} |")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
