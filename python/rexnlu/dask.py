"""Corpus extraction on a Dask cluster: the JSON-lines requests of ``rexnlu extract``, many machines.

Command line (docs/deploy.md)::

    python3 -m rexnlu.dask --scheduler tcp://HOST:8786 --input 'corpus/*.jsonl' --output DIR [-- EXTRACT ARGS]
    python3 -m rexnlu.dask --workers 2 --input 'corpus/*.jsonl' --output DIR     # a LocalCluster

For every input file DIR gets a file of the same name that equals ``rexnlu extract --input FILE``'s
output byte for byte: one line per input line, in order, error lines numbered by their line in the
file. Arguments after ``--`` go to ``rexnlu extract`` as they are (``--model``, ``--threads``,
``--options``, ``--schema``, ``--task``, ``--labels``, the ``--max-*`` limits...).

How: each Dask worker process runs ONE ``rexnlu extract`` process (started by a WorkerPlugin, so
the model is loaded once per worker process and kept for every partition) and feeds it the
partitions it is given through a pipe. The client cuts each file into partitions of
``--partition-lines`` lines, sends them to the workers (no shared file system needed), and writes
each finished partition atomically (temporary file + rename) under ``DIR/.rexnlu-dask/``, next
to a manifest naming the inputs. A worker that dies loses only its partitions in flight, which
Dask runs again elsewhere; a rerun of a killed job keeps the finished partitions. A file's output
is assembled (again temporary file + rename) once all its partitions are there.

Python::

    import dask.bag as db
    from rexnlu.dask import extract
    lines = extract(db.read_text('corpus/*.jsonl'), extract_args=['--model', 'models/x'])  # a Bag of str
"""

import argparse
import glob
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

try:
    import dask
    import dask.bag
    import distributed
except ImportError as e:  # e.g. pyenv's python3 first on PATH: Debian's Dask is Debian's python3's
    raise ImportError(f"rexnlu.dask needs Dask distributed ({e}): on Debian `apt install python3-distributed` and run "
                      "/usr/bin/python3 (or pip install 'distributed' into this interpreter)") from e

_STATE_DIR = ".rexnlu-dask"
_OWN_FLAGS = ("--input", "--output", "--resume", "--batch-size", "--no-progress")


# --------------------------------------------------------------------------- one worker's rexnlu
class Extractor:
    """One ``rexnlu extract`` process reading JSON lines from a pipe: the model is loaded once.

    ``run(lines, first_line)`` returns the output lines for ``lines`` (bytes without their
    newline), exactly as ``rexnlu extract`` writes them for that part of a file whose first line
    has number ``first_line``. Calls are serialized (one partition at a time per process).
    """

    def __init__(self, rexnlu_bin=None, extract_args=(), batch_size=16):
        for a in extract_args:
            if a.split("=")[0] in _OWN_FLAGS:
                raise ValueError(f"extract_args: {a} is set by rexnlu.dask itself")
        self.binary = rexnlu_bin or os.environ.get("REXNLU_BIN") or shutil.which("rexnlu")
        if not self.binary:
            raise FileNotFoundError("the rexnlu program is not on PATH: give rexnlu_bin= / --rexnlu PATH or set $REXNLU_BIN")
        self.args = list(extract_args)
        self.batch_size = int(batch_size)
        self._lock = threading.Lock()
        self._proc = None
        self._stderr = None

    def start(self):
        if self._proc and self._proc.poll() is None:
            return
        self._stderr = tempfile.TemporaryFile()
        cmd = [self.binary, "extract", "--batch-size", str(self.batch_size), "--no-progress", *self.args]
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)

    def close(self):
        proc, self._proc = self._proc, None
        if proc:
            proc.stdin.close()  # EOF: it finishes (nothing pending) and exits
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()

    def _failure(self):
        self._stderr.seek(0)
        tail = self._stderr.read()[-2000:].decode("utf-8", "replace").strip()
        code = self._proc.poll()
        self._proc = None
        return RuntimeError(f"rexnlu extract stopped (exit code {code}): {tail}")

    def run(self, lines, first_line):
        # rexnlu extract runs a batch once batch_size lines are pending (or at EOF): pad the
        # partition with empty lines (answered with an error line, no model work) to whole batches.
        pad = -len(lines) % self.batch_size
        with self._lock:
            self.start()
            proc = self._proc
            payload = b"".join(line + b"\n" for line in lines) + b"\n" * pad

            def feed():
                try:
                    proc.stdin.write(payload)
                    proc.stdin.flush()
                except (BrokenPipeError, ValueError):
                    pass  # it died: the reader sees EOF and reports its stderr

            writer = threading.Thread(target=feed, daemon=True)
            writer.start()
            out = []
            for i in range(len(lines) + pad):
                line = proc.stdout.readline()
                if not line.endswith(b"\n"):
                    writer.join()
                    raise self._failure()
                if i < len(lines):
                    out.append(_renumber(line, first_line + i))
            writer.join()
            return out


def _renumber(line, number):
    """Error lines start with {"line":N (N counts the lines this process read): the file's number."""
    prefix = b'{"line":'
    if not line.startswith(prefix):
        return line
    end = line.index(b",", len(prefix))
    return prefix + str(number).encode() + line[end:]


class RexnluPlugin(distributed.WorkerPlugin):
    """Starts one :class:`Extractor` per Dask worker process (setup) and stops it (teardown)."""

    def __init__(self, rexnlu_bin=None, extract_args=(), batch_size=16):
        self.config = (rexnlu_bin, tuple(extract_args), int(batch_size))
        self.name = "rexnlu-" + hashlib.sha1(repr(self.config).encode()).hexdigest()[:12]
        self.extractor = None

    def setup(self, worker):
        self.extractor = Extractor(*self.config)
        self.extractor.start()

    def teardown(self, worker):
        if self.extractor:
            self.extractor.close()


_local = {}  # outside a distributed worker (dask's threaded scheduler): one Extractor per config
_local_lock = threading.Lock()


def _extractor(plugin_name, config):
    try:
        return distributed.get_worker().plugins[plugin_name].extractor
    except (ValueError, KeyError):
        with _local_lock:
            if plugin_name not in _local:
                _local[plugin_name] = Extractor(*config)
            return _local[plugin_name]


def run_partition(plugin_name, config, lines, first_line):
    """The task: output lines (bytes, newline-terminated) of one partition."""
    return b"".join(_extractor(plugin_name, config).run(lines, first_line))


# --------------------------------------------------------------------------- collections
def extract(collection, *, rexnlu_bin=None, extract_args=(), batch_size=16, client=None):
    """The output lines (a Bag of str, newline-terminated) of a Bag or DataFrame of requests.

    ``collection``: a ``dask.bag.Bag`` of JSON-lines requests (str, e.g. ``db.read_text(...)``,
    or dicts) or a ``dask.dataframe.DataFrame`` whose rows are requests (columns text, schema,
    task, labels, id...). The result has one line per request in the same order, as ``rexnlu
    extract`` writes them; error lines are numbered from 1 over the whole collection (counting
    the partitions' lengths first). Registers the worker plugin on ``client`` (default: the
    current distributed client, if any; without one dask's local scheduler runs it).
    """
    if not isinstance(collection, dask.bag.Bag):
        collection = collection.to_bag(format="dict")
    plugin = RexnluPlugin(rexnlu_bin, extract_args, batch_size)
    if client is None:
        try:
            client = distributed.get_client()
        except ValueError:
            client = None
    if client is not None:
        client.register_worker_plugin(plugin, name=plugin.name)
    lengths = collection.map_partitions(lambda p: [sum(1 for _ in p)]).compute()
    starts = [1]
    for n in lengths[:-1]:
        starts.append(starts[-1] + n)

    def part(items, first_line):  # first_line: the partition [n] of the bag of starts
        lines = [_as_line(x) for x in items]
        out = run_partition(plugin.name, plugin.config, lines, first_line[0])
        return [line.decode("utf-8", "surrogateescape") for line in out.splitlines(keepends=True)]

    return collection.map_partitions(part, dask.bag.from_sequence(starts, npartitions=len(starts)))


def _as_line(item):
    if isinstance(item, bytes):
        return item.rstrip(b"\n")
    if isinstance(item, str):
        return item.rstrip("\n").encode("utf-8", "surrogateescape")
    row = {k: v for k, v in dict(item).items() if not _missing(v)}
    return json.dumps(row, ensure_ascii=False).encode()


def _missing(value):
    return value is None or (isinstance(value, float) and value != value)


# --------------------------------------------------------------------------- files
def _read_lines(path):
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the final newline ends the last line; it does not start another
    return lines


def _write_atomic(path, data):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Job:
    """The partitions of the input files and what is already done under DIR/.rexnlu-dask/."""

    def __init__(self, inputs, output_dir, partition_lines, extract_args):
        names = [os.path.basename(p) for p in inputs]
        if len(set(names)) != len(names):
            raise ValueError("two input files have the same name; their outputs would collide in " + output_dir)
        self.inputs = inputs
        self.output_dir = output_dir
        self.state = os.path.join(output_dir, _STATE_DIR)
        self.partition_lines = partition_lines
        self.manifest = {
            "inputs": [{"path": os.path.abspath(p), "bytes": os.path.getsize(p), "mtime_ns": os.stat(p).st_mtime_ns}
                       for p in inputs],
            "partition_lines": partition_lines,
            "extract_args": list(extract_args),
        }

    def prepare(self):
        """Keeps the finished partitions of an earlier run of the same job; returns how many."""
        os.makedirs(self.state, exist_ok=True)
        path = os.path.join(self.state, "manifest.json")
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                old = json.load(f)
        if old != self.manifest:
            for name in os.listdir(self.state):
                os.remove(os.path.join(self.state, name))
            _write_atomic(path, json.dumps(self.manifest, indent=1).encode())
            return 0
        return sum(1 for n in os.listdir(self.state) if n.endswith(".part"))

    def part_path(self, file_index, part_index):
        return os.path.join(self.state, f"{file_index:06d}-{part_index:08d}.part")

    def output_path(self, file_index):
        return os.path.join(self.output_dir, os.path.basename(self.inputs[file_index]))

    def assemble(self, file_index, parts):
        data = b""
        for k in range(parts):
            with open(self.part_path(file_index, k), "rb") as f:
                data += f.read()
        _write_atomic(self.output_path(file_index), data)


class Progress:
    def __init__(self, total_parts, total_lines, done_parts, stream=sys.stderr):
        self.total_parts, self.total_lines = total_parts, total_lines
        self.parts, self.lines, self.start, self.stream = done_parts, 0, time.monotonic(), stream
        self.last = 0.0

    def update(self, lines, final=False):
        self.parts += 1
        self.lines += lines
        now = time.monotonic()
        if final or now - self.last >= 1.0 or self.parts == self.total_parts:
            self.last = now
            rate = self.lines / max(now - self.start, 1e-9)
            print(f"rexnlu.dask: {self.parts}/{self.total_parts} partitions, {self.lines} lines this run, "
                  f"{rate:.1f} lines/s", file=self.stream, flush=True)


def run_files(client, inputs, output_dir, *, rexnlu_bin=None, extract_args=(), batch_size=16,
              partition_lines=256, in_flight=None, progress=True):
    """Extracts every input file on the cluster of ``client`` into ``output_dir`` (see the module doc).

    Returns ``{'partitions', 'resumed', 'lines', 'seconds'}`` (resumed: partitions kept from an
    earlier run).
    """
    started = time.monotonic()
    os.makedirs(output_dir, exist_ok=True)
    job = Job(inputs, output_dir, partition_lines, extract_args)
    resumed = job.prepare()
    plugin = RexnluPlugin(rexnlu_bin, extract_args, batch_size)
    client.register_worker_plugin(plugin, name=plugin.name)

    files = [_read_lines(p) for p in inputs]
    parts = [max(1, -(-len(lines) // partition_lines)) if lines else 0 for lines in files]
    todo = [(i, k) for i, n in enumerate(parts) for k in range(n) if not os.path.exists(job.part_path(i, k))]
    total = sum(parts)
    if resumed:
        print(f"rexnlu.dask: resuming: {total - len(todo)} of {total} partitions are done", file=sys.stderr, flush=True)
    if in_flight is None:
        in_flight = 2 * max(1, sum(client.nthreads().values()))
    bar = Progress(total, sum(len(f) for f in files), total - len(todo)) if progress else None

    def submit(i, k):
        lines = files[i][k * partition_lines:(k + 1) * partition_lines]
        future = client.submit(run_partition, plugin.name, plugin.config, lines, k * partition_lines + 1,
                               key=f"rexnlu-{plugin.name}-{hashlib.sha1(job.part_path(i, k).encode()).hexdigest()[:16]}",
                               pure=False, retries=3)
        keys[future.key] = (i, k, len(lines))
        return future

    keys = {}
    queue = list(todo)
    running = distributed.as_completed([submit(*queue.pop(0)) for _ in range(min(in_flight, len(queue)))])
    lines_done = 0
    for future in running:
        i, k, n = keys.pop(future.key)
        _write_atomic(job.part_path(i, k), future.result())
        future.release()
        lines_done += n
        if bar:
            bar.update(n)
        if queue:
            running.add(submit(*queue.pop(0)))
    for i, n in enumerate(parts):
        job.assemble(i, n)
    shutil.rmtree(job.state)
    return {"partitions": total, "resumed": total - len(todo), "lines": lines_done,
            "seconds": time.monotonic() - started}


# --------------------------------------------------------------------------- command line
def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    extract_args = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extract_args = argv[:cut], argv[cut + 1:]
    ap = argparse.ArgumentParser(
        prog="python3 -m rexnlu.dask",
        description="rexnlu extract over JSON-lines files on a Dask cluster; arguments after -- go to rexnlu extract.")
    ap.add_argument("--input", required=True, action="append", help="file or glob (quote it); repeatable")
    ap.add_argument("--output", required=True, help="directory: one output file per input file, same name")
    ap.add_argument("--scheduler", help="address of a running dask-scheduler (default: start a LocalCluster)")
    ap.add_argument("--workers", type=int, default=None, help="LocalCluster worker processes (default: one per core)")
    ap.add_argument("--partition-lines", type=int, default=256, help="lines per partition (a task)")
    ap.add_argument("--batch-size", type=int, default=16, help="rexnlu extract --batch-size")
    ap.add_argument("--rexnlu", help="the rexnlu program on the workers (default: $REXNLU_BIN or rexnlu on PATH)")
    ap.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    a = ap.parse_args(argv)
    if a.partition_lines < 1 or a.batch_size < 1:
        ap.error("--partition-lines and --batch-size must be >= 1")
    inputs = []
    for pattern in a.input:
        found = sorted(glob.glob(pattern))
        if not found:
            ap.error(f"--input {pattern}: no such file")
        inputs += found
    if a.scheduler:
        cluster, client = None, distributed.Client(a.scheduler)
    else:
        # Loopback only; the dashboard (when bokeh is installed) on 127.0.0.1:8787 or a free port.
        cluster = distributed.LocalCluster(n_workers=a.workers or os.cpu_count() or 1, threads_per_worker=1,
                                           processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:8787")
        client = distributed.Client(cluster)
    try:
        if not a.no_progress:
            print(f"rexnlu.dask: scheduler {client.scheduler.address}, {len(client.nthreads())} workers"
                  + (f", dashboard {client.dashboard_link}" if _has_dashboard(client) else ""), file=sys.stderr, flush=True)
        stats = run_files(client, inputs, a.output, rexnlu_bin=a.rexnlu, extract_args=extract_args,
                          batch_size=a.batch_size, partition_lines=a.partition_lines, progress=not a.no_progress)
    finally:
        client.close()
        if cluster:
            cluster.close()
    print(json.dumps(stats), file=sys.stderr)
    return 0


def _has_dashboard(client):
    """The dashboard needs bokeh (Debian: python3-bokeh); without it there is no page to point at."""
    return importlib.util.find_spec("bokeh") is not None


if __name__ == "__main__":
    # Run the importable module's main, so that what is sent to the workers is rexnlu.dask.X, not __main__.X.
    from rexnlu import dask as _module

    sys.exit(_module.main())
