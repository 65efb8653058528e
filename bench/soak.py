#!/usr/bin/env python3
"""Soak client for `rexnlu serve` (bench/soak.sh starts the server and calls this).

For SOAK_SECONDS it sends a weighted mix of valid, invalid and hostile traffic from a few worker
threads (raw sockets, standard library only), keeps a few slow-loris connections open, samples the
server's resident memory, and at the end prints counts per kind and status, every unexpected
outcome, and RSS first/median/max/last. Exit code: 0 clean, 1 unexpected outcome (a 5xx that was
not provoked on purpose, a reset or a missing answer where one was due, a wrong status),
2 the server died, 3 RSS grew past the bound.

Each kind states the statuses it accepts. 429 (queue_full / overloaded) is accepted for the
extract kinds: it is the service shedding load, not an error. The only deliberate 5xx is the
`heavy` kind (a text of 2000 characters with a 3-level schema) that may get 504 when the model
thread is busy.

    soak.py --port P --pid PID --seconds S [--workers N] [--pause-ms MS] [--slowloris N] [--rss-growth-mb M]
"""
import argparse
import collections
import gzip
import json
import random
import socket
import statistics
import sys
import threading
import time

HOST = "127.0.0.1"
TEXT = ("1944年毕业于北大的名古屋铁道会长谷口清太郎等人在日本积极筹资，共筹款2.7亿日元，"
        "参加捐款的日本企业有69家。")


class Closed(Exception):
    """The server closed or reset the connection before a whole response arrived."""


def read_response(sock):
    """Reads one HTTP/1.1 response; returns (status, headers dict, body bytes)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise Closed("eof before the response head")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if status == 100:  # Expect: 100-continue; the real answer follows
        return read_response_from(sock, rest)
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise Closed("eof inside the response body")
        rest += chunk
    return status, headers, rest[:length], rest[length:]


def read_response_from(sock, already):
    class Prefixed:
        def __init__(self):
            self.buf = already

        def recv(self, n):
            if self.buf:
                out, self.buf = self.buf, b""
                return out
            return sock.recv(n)
    return read_response(Prefixed())


def request_bytes(method, path, body=b"", headers=None, host="127.0.0.1"):
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    hdrs = {"Content-Type": "application/json"}
    hdrs.update(headers or {})
    if body or method == "POST":
        hdrs.setdefault("Content-Length", str(len(body)))
    for k, v in hdrs.items():
        if v is not None:
            lines.append(f"{k}: {v}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def connect(port, timeout=60):
    s = socket.create_connection((HOST, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def one(port, raw, timeout=60):
    """Sends raw bytes on a fresh connection, returns the status of the one response."""
    with connect(port, timeout) as s:
        s.sendall(raw)
        status, headers, body, _ = read_response(s)
        return status, body


def extract(body_obj, path="/v1/extract"):
    return request_bytes("POST", path, json.dumps(body_obj, ensure_ascii=False).encode())


# --- the kinds: each returns (status or outcome string, body) -------------------------------------

def k_valid_ner(port):
    return one(port, extract({"text": TEXT, "schema": {"人物": None, "地理位置": None, "组织机构": None}}))


def k_valid_re(port):
    return one(port, extract({"text": TEXT, "schema": {"人物": {"毕业院校(组织机构)": None}, "组织机构": None},
                              "options": {"probabilities": True}}))


def k_valid_classify(port):
    return one(port, extract({"text": "这部电影拍得真好看，演员也很用心。", "task": "classify",
                              "labels": ["正面", "负面"]}))


def k_valid_sentiment(port):
    return one(port, extract({"text": "很满意，音质很好，发货速度快，值得购买", "task": "sentiment"}))


def k_valid_texts(port):
    return one(port, extract({"texts": [TEXT, "谷口清太郎是名古屋铁道会长。"], "schema": {"人物": None}}))


def k_valid_original(port):
    return one(port, extract({"text": TEXT, "schema": {"人物": None}}, path="/extract"))


def k_heavy(port):
    text = (TEXT * 40)[:2000]
    return one(port, extract({"text": text, "schema": {"人物": {"毕业院校(组织机构)": {"地点": None}}}}), 120)


def k_gets(port):
    path = random.choice(["/health", "/info", "/metrics", "/openapi.json", "/"])
    return one(port, request_bytes("GET", path))


def k_invalid_json(port):
    body = random.choice([b"{", b"not json", b'{"text": "a", "schema": }', bytes(random.getrandbits(8)
                          for _ in range(200)), b'{"text": "\xff\xfe", "schema": {}}'])
    return one(port, request_bytes("POST", "/v1/extract", body))


def k_malformed_schema(port):
    schema = random.choice([[1, 2], 5, {"人物": 3}, {"人物": "x"}, {"a": {"b": []}}, "{not json"])
    return one(port, extract({"text": TEXT, "schema": schema}))


def k_bad_fields(port):
    body = random.choice([{"text": ""}, {"text": 5, "schema": {}}, {"text": TEXT, "schema": {}, "typo": 1},
                          {"texts": [], "schema": {}}, {"text": TEXT, "task": "no_such_task"},
                          {"text": TEXT, "task": "classify"}])
    return one(port, extract(body))


def k_bad_threshold(port):
    value = random.choice([-1e9, 1e9, "abc", None, [1], 21, -21])
    return one(port, extract({"text": TEXT, "schema": {"人物": None}, "options": {"link_threshold": value}}))


def k_oversized(port):
    # Announces 2 MiB, sends 64 KiB of it, expects 413 before the rest.
    with connect(port) as s:
        s.sendall(request_bytes("POST", "/v1/extract", headers={"Content-Length": str(2 << 20)}))
        s.sendall(b"x" * 65536)
        status, _, body, _ = read_response(s)
        return status, body


def k_deep_nesting(port):
    depth = random.choice([100, 10000, 80000])
    return one(port, request_bytes("POST", "/v1/extract",
                                   b'{"text": "a", "schema": ' + b"[" * depth + b"]" * depth + b"}"))


GZIP_BOMB = None  # built once (compressing 20 MiB each time would cost the client CPU)


def k_gzip_bomb(port):
    return one(port, request_bytes("POST", "/v1/extract", GZIP_BOMB, {"Content-Encoding": "gzip"}))


def k_chunked_over(port):
    with connect(port) as s:
        s.sendall(request_bytes("POST", "/v1/extract", headers={"Transfer-Encoding": "chunked",
                                                                 "Content-Length": None}))
        chunk = b"x" * 65536
        try:
            for _ in range(40):  # 2.5 MiB in 64 KiB chunks
                s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered 413 and stopped reading: the answer is still in our buffer
        status, _, body, _ = read_response(s)
        return status, body


def k_header_flood(port):
    headers = {f"X-Flood-{i}": "v" * 100 for i in range(300)}
    return one(port, request_bytes("GET", "/health", headers=headers))


def k_pipelined(port):
    reqs = [request_bytes("GET", "/health"),
            extract({"text": TEXT, "schema": {"人物": None}}),
            request_bytes("GET", "/info")]
    with connect(port) as s:
        s.sendall(b"".join(reqs))
        statuses = []
        rest = b""
        for _ in reqs:
            status, _, _, rest = read_response_from(s, rest)
            statuses.append(status)
    return ("pipelined " + ",".join(map(str, statuses))), b""


def k_wrong_method(port):
    method, path = random.choice([("GET", "/v1/extract"), ("PUT", "/extract"), ("DELETE", "/health"),
                                  ("POST", "/info")])
    return one(port, request_bytes(method, path))


def k_foreign_host(port):
    return one(port, request_bytes("POST", "/v1/extract", json.dumps({"text": TEXT, "schema": {}}).encode(),
                                   host="evil.example"))


def k_foreign_origin(port):
    return one(port, request_bytes("POST", "/v1/extract", json.dumps({"text": TEXT, "schema": {}}).encode(),
                                   {"Content-Type": "text/plain", "Origin": "http://evil.example"}))


def k_protocol_garbage(port):
    raw = random.choice([b"GARBAGE\r\n\r\n", b"GET /health HTTP/1.1\r\nBad Header Line\r\n\r\n",
                         b"POST /v1/extract HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"])
    return one(port, raw)


def k_disconnect_mid_body(port):
    with connect(port) as s:
        s.sendall(request_bytes("POST", "/v1/extract", headers={"Content-Length": "5000"}) + b'{"text": "')
    return "disconnected", b""


def k_disconnect_mid_work(port):
    # A whole request whose client goes away before the answer (the work is already queued).
    with connect(port) as s:
        s.sendall(extract({"text": (TEXT * 20)[:1000], "schema": {"人物": {"毕业院校(组织机构)": None}}}))
        time.sleep(random.uniform(0.0, 0.3))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
    return "disconnected", b""


OK_EXTRACT = {200, 429}
KINDS = {  # name: (function, weight, accepted statuses / outcomes)
    "valid_ner": (k_valid_ner, 10, OK_EXTRACT),
    "valid_re": (k_valid_re, 6, OK_EXTRACT),
    "valid_classify": (k_valid_classify, 4, OK_EXTRACT),
    "valid_sentiment": (k_valid_sentiment, 3, OK_EXTRACT),
    "valid_texts": (k_valid_texts, 3, OK_EXTRACT),
    "valid_original": (k_valid_original, 3, OK_EXTRACT),
    "heavy": (k_heavy, 1, OK_EXTRACT | {504}),
    "gets": (k_gets, 6, {200}),
    "invalid_json": (k_invalid_json, 4, {400}),
    "malformed_schema": (k_malformed_schema, 4, {422}),
    "bad_fields": (k_bad_fields, 4, {422}),
    "bad_threshold": (k_bad_threshold, 3, {422}),
    "oversized_body": (k_oversized, 2, {413}),
    "deep_nesting": (k_deep_nesting, 2, {400}),
    "gzip_bomb": (k_gzip_bomb, 2, {415}),
    "chunked_over_limit": (k_chunked_over, 1, {413}),
    "header_flood": (k_header_flood, 2, {431}),
    "pipelined": (k_pipelined, 3, {"pipelined 200,200,200", "pipelined 200,429,200"}),
    "wrong_method": (k_wrong_method, 3, {405}),
    "foreign_host": (k_foreign_host, 2, {403}),
    "foreign_origin": (k_foreign_origin, 2, {403}),
    "protocol_garbage": (k_protocol_garbage, 2, {400, 501}),
    "disconnect_mid_body": (k_disconnect_mid_body, 2, {"disconnected"}),
    "disconnect_mid_work": (k_disconnect_mid_work, 2, {"disconnected"}),
}


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = collections.Counter()  # (kind, outcome) -> n
        self.unexpected = []                 # (t, kind, outcome, detail)
        self.latency = collections.defaultdict(list)

    def add(self, kind, outcome, ok, detail, seconds):
        with self.lock:
            self.counts[(kind, str(outcome))] += 1
            if ok:
                self.latency[kind].append(seconds)
            else:
                self.unexpected.append((time.time(), kind, str(outcome), detail[:300]))


def worker(port, stop, tally, rng_seed, pause):
    rnd = random.Random(rng_seed)
    names = list(KINDS)
    weights = [KINDS[n][1] for n in names]
    while not stop.is_set():
        kind = rnd.choices(names, weights)[0]
        fn, _, accepted = KINDS[kind]
        t0 = time.monotonic()
        try:
            outcome, body = fn(port)
            detail = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
        except (Closed, ConnectionResetError, BrokenPipeError) as e:
            outcome, detail = "reset/closed", repr(e)
        except socket.timeout as e:
            outcome, detail = "client timeout", repr(e)
        except OSError as e:
            outcome, detail = "socket error", repr(e)
        tally.add(kind, outcome, outcome in accepted, detail, time.monotonic() - t0)
        if pause:
            stop.wait(pause)


def slowloris(port, stop, tally):
    """One byte a second of a request head; expects 408 (read timeout) or a close at shutdown."""
    head = request_bytes("GET", "/health")
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            with connect(port, timeout=5) as s:
                sent = 0
                s.settimeout(0.05)
                while not stop.is_set() and sent < len(head) - 1:
                    s.sendall(head[sent:sent + 1])
                    sent += 1
                    try:
                        data = s.recv(4096)
                    except socket.timeout:
                        stop.wait(1.0)
                        continue
                    if not data:
                        raise Closed("closed without an answer")
                    status = int(data.split()[1])
                    tally.add("slowloris", status, status == 408, data[:200].decode("latin-1"),
                              time.monotonic() - t0)
                    break
        except (Closed, OSError) as e:
            tally.add("slowloris", "reset/closed", False, repr(e), time.monotonic() - t0)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] not in "ZX"
    except OSError:
        return False


def main():
    global GZIP_BOMB
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=1800)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--slowloris", type=int, default=2)
    ap.add_argument("--pause-ms", type=float, default=0, help="each worker waits this long between requests")
    ap.add_argument("--sample-seconds", type=float, default=5)
    ap.add_argument("--rss-growth-mb", type=float, default=16,
                    help="bound on (median RSS of the last quarter - median RSS of the second quarter)")
    ap.add_argument("--rss-log", default="")
    args = ap.parse_args()

    GZIP_BOMB = gzip.compress(b'{"text": "' + b"a" * (20 << 20) + b'"}', 9)
    tally = Tally()
    stop = threading.Event()
    threads = [threading.Thread(target=worker, args=(args.port, stop, tally, i, args.pause_ms / 1000), daemon=True)
               for i in range(args.workers)]
    threads += [threading.Thread(target=slowloris, args=(args.port, stop, tally), daemon=True)
                for _ in range(args.slowloris)]
    for t in threads:
        t.start()

    samples = []  # (seconds since start, RSS KiB)
    start = time.monotonic()
    died = False
    log = open(args.rss_log, "w") if args.rss_log else None
    while time.monotonic() - start < args.seconds:
        if not alive(args.pid):
            died = True
            break
        samples.append((time.monotonic() - start, rss_kib(args.pid)))
        if log:
            log.write(f"{samples[-1][0]:.0f} {samples[-1][1]}\n")
            log.flush()
        time.sleep(args.sample_seconds)
    stop.set()
    for t in threads:
        t.join(timeout=130)
    if not died and not alive(args.pid):
        died = True
    if not died:
        samples.append((time.monotonic() - start, rss_kib(args.pid)))

    # --- report ---
    elapsed = time.monotonic() - start
    total = sum(tally.counts.values())
    print(f"soak: {elapsed:.0f} s, {total} requests/connections, {args.workers} workers "
          f"({args.pause_ms:g} ms pause) + {args.slowloris} slow-loris connections")
    print("| kind | outcomes (status: count) | accepted | p50 ms | max ms |")
    print("| --- | --- | --- | --- | --- |")
    for kind in list(KINDS) + ["slowloris"]:
        outs = sorted((o, n) for (k, o), n in tally.counts.items() if k == kind)
        if not outs:
            continue
        lat = tally.latency.get(kind) or [0]
        accepted = KINDS[kind][2] if kind in KINDS else {408}
        print(f"| {kind} | {', '.join(f'{o}: {n}' for o, n in outs)} | "
              f"{', '.join(sorted(map(str, accepted)))} | {statistics.median(lat) * 1000:.0f} | "
              f"{max(lat) * 1000:.0f} |")
    print(f"unexpected outcomes: {len(tally.unexpected)}")
    for t, kind, outcome, detail in tally.unexpected[:30]:
        print(f"  +{t - (time.time() - elapsed):.0f}s {kind}: {outcome}: {detail}")

    code = 0
    if tally.unexpected:
        code = 1
    mib = [kib / 1024 for _, kib in samples]
    if mib:
        # The first quarter is warm-up (the allocator's high-water mark after the first large
        # requests); "flat" compares the second quarter with the last.
        q = max(1, len(mib) // 4)
        second_q, last_q = statistics.median(mib[q:2 * q] or mib[:q]), statistics.median(mib[-q:])
        growth = last_q - second_q
        tenth = max(1, len(mib) // 10)
        series = ", ".join(f"{statistics.median(mib[i:i + tenth]):.1f}" for i in range(0, len(mib), tenth))
        print(f"RSS MiB ({len(mib)} samples every {args.sample_seconds:g} s): first {mib[0]:.1f}, "
              f"median {statistics.median(mib):.1f}, max {max(mib):.1f}, last {mib[-1]:.1f}")
        print(f"RSS MiB, median of each tenth of the run: {series}")
        print(f"RSS growth: median of the last quarter - median of the second quarter = {growth:+.1f} MiB "
              f"(bound {args.rss_growth_mb:g})")
        if growth > args.rss_growth_mb:
            print("FAIL: RSS grew past the bound")
            code = max(code, 3)
    if died:
        print("FAIL: the server process died")
        code = 2
    print("soak result:", "PASS" if code == 0 else f"FAIL (exit {code})")
    return code


if __name__ == "__main__":
    sys.exit(main())
