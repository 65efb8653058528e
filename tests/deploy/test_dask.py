"""rexnlu.dask: the output equals `rexnlu extract` line for line, on a LocalCluster, through the
bag function, and on a real dask-scheduler + two dask-worker processes on 127.0.0.1 of which one
is killed mid-run; a job killed as a whole resumes from its finished partitions."""
import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REXNLU_BIN, env, free_port, make_corpus, need, need_module, reference

EXTRACT = ["--", "--threads", "1"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    need_module("distributed")
    base = tmp_path_factory.mktemp("corpus")
    paths = make_corpus(str(base / "in"))
    return paths, reference(paths, str(base / "ref"))


def run_dask(args, **kw):
    return subprocess.Popen([sys.executable, "-m", "rexnlu.dask", *args], env=env(), stderr=subprocess.PIPE,
                            text=True, **kw)


def outputs(directory, names):
    out = {}
    for name in names:
        with open(os.path.join(directory, name), "rb") as f:
            out[name] = f.read()
    return out


def test_local_cluster_equals_rexnlu_extract(corpus, tmp_path):
    paths, ref = corpus
    p = run_dask(["--workers", "2", "--partition-lines", "5", "--batch-size", "4",
                  "--input", os.path.join(os.path.dirname(paths[0]), "*.jsonl"), "--output", str(tmp_path), *EXTRACT])
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert "partitions" in err  # the progress lines
    assert outputs(str(tmp_path), ref) == ref
    # the error lines are numbered by their line in the file, not in the worker's stream
    lines = ref["st_ner_dev.jsonl"].decode().splitlines()
    assert [json.loads(lines[i]).get("line") for i in (2, 6, 11)] == [3, 7, 12]
    assert not os.path.exists(os.path.join(str(tmp_path), ".rexnlu-dask"))


def test_bag_function(corpus):
    import dask
    import dask.bag as db

    from rexnlu.dask import extract

    paths, ref = corpus
    with open(paths[0], encoding="utf-8") as f:
        lines = f.read().splitlines()
    bag = db.from_sequence(lines, npartitions=3)
    with dask.config.set(scheduler="sync"):
        got = extract(bag, rexnlu_bin=REXNLU_BIN, extract_args=["--threads", "1"], batch_size=4).compute()
    assert "".join(got).encode() == ref["st_ner_dev.jsonl"]


@pytest.fixture(scope="module")
def cluster():
    """dask-scheduler and two dask-worker processes (no nanny: killing one kills the worker) on loopback."""
    need_module("distributed")
    scheduler_bin, worker_bin = need("dask-scheduler"), need("dask-worker")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [subprocess.Popen([scheduler_bin, "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    workers = {}
    for name in ("a", "b"):
        workers[name] = subprocess.Popen(
            [worker_bin, address, "--name", name, "--host", "127.0.0.1", "--nthreads", "1", "--no-nanny",
             "--no-dashboard"], env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(workers[name])
    import distributed

    with distributed.Client(address, timeout=30) as c:
        c.wait_for_workers(2, timeout=30)
    yield address, workers
    for p in reversed(procs):
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


def wait_for_parts(directory, count, proc, timeout=40):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(glob.glob(os.path.join(directory, ".rexnlu-dask", "*.part"))) >= count:
            return
        assert proc.poll() is None, "the job ended before the kill: " + proc.stderr.read()
        time.sleep(0.05)
    raise AssertionError(f"no {count} finished partitions within {timeout} s")


def test_worker_killed_mid_run(corpus, cluster, tmp_path):
    paths, ref = corpus
    address, workers = cluster
    out = str(tmp_path)
    p = run_dask(["--scheduler", address, "--partition-lines", "2", "--batch-size", "2", "--input", paths[0],
                  "--input", paths[1], "--input", paths[2], "--output", out, *EXTRACT])
    wait_for_parts(out, 2, p)
    workers["a"].send_signal(signal.SIGKILL)  # mid-run: 24 partitions, 2 done, others queued on a and b
    workers["a"].wait(timeout=10)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    got = outputs(out, ref)
    assert got == ref  # complete, in order, no duplicated or lost line


def test_killed_job_resumes(corpus, cluster, tmp_path):
    paths, ref = corpus
    address, _ = cluster
    out = str(tmp_path)
    args = ["--scheduler", address, "--partition-lines", "2", "--batch-size", "2", "--input", paths[0],
            "--input", paths[1], "--input", paths[2], "--output", out, *EXTRACT]
    p = run_dask(args)
    wait_for_parts(out, 3, p)
    p.send_signal(signal.SIGKILL)  # the whole job (the client) dies
    p.wait(timeout=10)
    kept = sorted(glob.glob(os.path.join(out, ".rexnlu-dask", "*.part")))
    assert 3 <= len(kept) < 24, "the job ended before the kill"
    p = run_dask(args)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    stats = json.loads(err.strip().splitlines()[-1])
    assert f"resuming: {stats['resumed']} of 24 partitions are done" in err
    assert stats["resumed"] >= len(kept) and stats["lines"] < sum(r.count(b"\n") + 1 for r in ref.values()) - 1
    assert outputs(out, ref) == ref
