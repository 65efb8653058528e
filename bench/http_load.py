#!/usr/bin/env python3
"""Closed-loop HTTP load on a loopback `rexnlu serve`, standard library only (for machines
without wrk, such as the GPU machine): CONCURRENCY keep-alive connections, each sending the same
POST again as soon as its answer is in (or, with --bodies, the next of many request bodies, each
connection starting at another one), for DURATION seconds after WARMUP seconds of the same
load. The connections are spread over worker processes (asyncio in each) so that the client is
not the bottleneck.

    python3 bench/http_load.py --port P (--body body.json | --bodies bodies.jsonl) --concurrency 64 --duration 10 [--warmup 2]
        [--path /v1/extract] [--procs N] [--json]

Prints one JSON object: requests, seconds, qps (all answers), ok_qps (200s only), p50/p95/p99 latency in ms, responses by status,
socket errors, the first non-200 answer's body. Only 127.0.0.1 is ever targeted.
"""
import argparse
import asyncio
import json
import multiprocessing
import os
import time


async def one_connection(port, requests, first, until_warm, until_end, lat, statuses, errors, first_error):
    reader = writer = None
    n = first
    while time.monotonic() < until_end:
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            t0 = time.monotonic()
            writer.write(requests[n % len(requests)])
            n += 1
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length, close = 0, False
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"connection" and value.strip().lower() == b"close":
                    close = True
            answer = await reader.readexactly(length)
            if status != 200 and not first_error:
                first_error.append(answer[:300].decode("utf-8", "replace"))
            t1 = time.monotonic()
            if until_warm <= t1 <= until_end:  # answers completed inside the window, as wrk counts
                lat.append(t1 - t0)
                statuses[status] = statuses.get(status, 0) + 1
            if close:
                writer.close()
                writer = None
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            if time.monotonic() >= until_warm:
                errors[0] += 1
            if writer is not None:
                writer.close()
            writer = None
            await asyncio.sleep(0.01)
    if writer is not None:
        writer.close()


def worker(args):
    port, requests, first, connections, start, warmup, duration = args
    lat, statuses, errors, first_error = [], {}, [0], []

    async def run():
        until_warm = start + warmup
        until_end = until_warm + duration
        await asyncio.gather(*(one_connection(port, requests, first + c, until_warm, until_end, lat, statuses, errors,
                                              first_error) for c in range(connections)))

    asyncio.run(run())
    return lat, statuses, errors[0], first_error


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(p / 100.0 * len(sorted_values)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, required=True)
    bodies = ap.add_mutually_exclusive_group(required=True)
    bodies.add_argument("--body", help="file with the JSON request body")
    bodies.add_argument("--bodies", help="JSON lines, one request body per line, sent in turn (varied requests)")
    ap.add_argument("--path", default="/v1/extract")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--procs", type=int, default=0, help="worker processes (0 = min(concurrency, cores / 2))")
    a = ap.parse_args()
    if a.body:
        bodies = [open(a.body, "rb").read()]
    else:
        bodies = [line.strip() for line in open(a.bodies, "rb") if line.strip()]
        if not bodies:
            ap.error(f"--bodies {a.bodies}: no request body in the file")
    requests = [(f"POST {a.path} HTTP/1.1\r\nHost: 127.0.0.1:{a.port}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\n\r\n").encode() + body for body in bodies]
    procs = a.procs or max(1, min(a.concurrency, (os.cpu_count() or 2) // 2))
    share = [a.concurrency // procs + (1 if i < a.concurrency % procs else 0) for i in range(procs)]
    start = time.monotonic() + 0.5  # every process starts its clock at the same moment
    with multiprocessing.Pool(procs) as pool:
        # Connection c (over all processes) starts at body c: the server sees a mix from the start.
        firsts = [sum(share[:i]) for i in range(procs)]
        parts = pool.map(worker, [(a.port, requests, firsts[i], n, start, a.warmup, a.duration)
                                  for i, n in enumerate(share) if n > 0])
    lat = sorted(x for p in parts for x in p[0])
    statuses = {}
    for p in parts:
        for k, v in p[1].items():
            statuses[k] = statuses.get(k, 0) + v
    print(json.dumps({
        "concurrency": a.concurrency, "procs": procs, "bodies": len(requests), "requests": len(lat), "seconds": a.duration,
        "qps": round(len(lat) / a.duration, 1), "ok_qps": round(statuses.get(200, 0) / a.duration, 1),
        "p50_ms": round(percentile(lat, 50) * 1e3, 2), "p95_ms": round(percentile(lat, 95) * 1e3, 2),
        "p99_ms": round(percentile(lat, 99) * 1e3, 2),
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "socket_errors": sum(p[2] for p in parts),
        "first_error": next((p[3][0] for p in parts if p[3]), ""),
    }))


if __name__ == "__main__":
    main()
