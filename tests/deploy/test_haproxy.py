"""Two `rexnlu serve` replicas behind HAProxy (deploy/haproxy.cfg) on 127.0.0.1 under load; one is
stopped with SIGTERM mid-run. Its /health must turn 503 "draining" while it still accepts
connections (so the balancer takes it out first), it must exit 0, and no client request may fail:
what the stopping replica does not answer, HAProxy retries on the other one."""
import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time

import pytest

from conftest import REXNLU_BIN, ROOT, env, free_port, need

CONFIG = os.path.join(ROOT, "deploy", "haproxy.cfg")
DRAIN_DELAY_MS = 1500
BODY = json.dumps({"text": "由上海文艺出版社、中国作家协会创联部等单位在北京举办的研讨会", "schema": {"组织机构": None, "地理位置": None}},
                  ensure_ascii=False).encode()


def get(port, path, timeout=5):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def wait_until(what, check, timeout=30, refused_ok=True):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            if not refused_ok:
                raise
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout} s")


class Replica:
    def __init__(self, log_path):
        self.log = open(log_path, "w+b")
        self.proc = subprocess.Popen(
            [REXNLU_BIN, "serve", "--host", "127.0.0.1", "--port", "0", "--compute-threads", "1", "--threads", "8",
             "--drain-delay-ms", str(DRAIN_DELAY_MS)], stdout=subprocess.PIPE, stderr=self.log, env=env())
        line = self.proc.stdout.readline().decode()
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        assert match, f"rexnlu serve said {line!r}"
        self.port = int(match.group(1))
        wait_until(f"replica on {self.port} healthy", lambda: get(self.port, "/health")[0] == 200)

    def served(self):
        """Extract requests this replica answered (its access log)."""
        self.log.seek(0)
        return self.log.read().count(b"/v1/extract")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


@pytest.fixture
def replicas(tmp_path):
    started = []
    try:
        for n in range(2):
            started.append(Replica(str(tmp_path / f"replica{n}.log")))
        yield started
    finally:
        for r in started:
            r.stop()


def test_replica_stopped_under_load(replicas, tmp_path):
    haproxy = need("haproxy")
    port = free_port()
    e = env()
    e.update(REXNLU_LISTEN=f"127.0.0.1:{port}", REXNLU_REPLICA1=f"127.0.0.1:{replicas[0].port}",
             REXNLU_REPLICA2=f"127.0.0.1:{replicas[1].port}")
    log = open(str(tmp_path / "haproxy.log"), "w+b")
    lb = subprocess.Popen([haproxy, "-db", "-f", CONFIG], env=e, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until("haproxy answering", lambda: get(port, "/health")[0] == 200)
        time.sleep(0.5)  # both servers up (rise 2 x fastinter)
        results, stop_load = [], threading.Event()

        def client():
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            while not stop_load.is_set():
                try:
                    c.request("POST", "/v1/extract", body=BODY, headers={"Content-Type": "application/json"})
                    r = c.getresponse()
                    r.read()
                    results.append(r.status)
                except (OSError, http.client.HTTPException) as ex:
                    results.append(repr(ex))
                    c.close()
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.close()

        threads = [threading.Thread(target=client, daemon=True) for _ in range(4)]
        for t in threads:
            t.start()
        try:
            wait_until("load on both replicas", lambda: replicas[0].served() > 0 and replicas[1].served() > 0)
            victim = replicas[0]
            victim.proc.send_signal(signal.SIGTERM)
            # Draining: /health turns 503 "draining" (once the signal is handled) while the socket
            # still accepts; a refused connection before that is the bug this checks.
            wait_until("/health draining", lambda: json.loads(get(victim.port, "/health")[1])["status"] == "draining",
                       timeout=5, refused_ok=False)
            assert victim.proc.wait(timeout=30) == 0
            after = len(results)
            time.sleep(1.0)  # load goes on with one replica
        finally:
            stop_load.set()
            for t in threads:
                t.join(timeout=40)
        failed = [r for r in results if r != 200]
        assert len(results) > after, "no request answered after the stop"
        assert not failed, f"{len(failed)} of {len(results)} requests failed: {failed[:5]}"
        log.seek(0)
        text = log.read().decode(errors="replace")
        assert re.search(r"replica1 is DOWN", text), text[-2000:]
        print(f"{len(results)} requests, all 200; replica1 served {victim.served()}, replica2 {replicas[1].served()}")
    finally:
        lb.terminate()
        lb.wait(timeout=10)
        log.close()
