#!/usr/bin/env python3
"""minimal.py: the smallest correct blocklab process-arm client (protocol v1,
docs/process-arms.md), standard library only.

Workload `noop`: each transaction busy-waits `busy_ns` nanoseconds (param,
default 0). Both measure modes: `transactions` (warmup, then measured
transactions, totals over all workers) and `window` (warmup_s, then
measured_s seconds). It runs its transactions on one thread whatever
`workers` says. Run: `python3 peers/examples/minimal.py < request.json`.
"""
import json
import sys
import time
from collections import Counter


def emit(event):
    print(json.dumps(event), flush=True)


def round3(v):
    """Keeps 3 significant digits, as the protocol asks of latencies."""
    m = 1
    while v // m >= 1000:
        m *= 10
    return (v + m // 2) // m * m


def main():
    try:
        req = json.load(sys.stdin)
    except ValueError as e:
        print(f"minimal.py: cannot read the run request on stdin: {e}", file=sys.stderr)
        sys.exit(2)
    if req.get("protocol") != 1:
        print(f"minimal.py: speaks protocol 1, the request is protocol {req.get('protocol')}", file=sys.stderr)
        sys.exit(2)
    if req.get("workload") != "noop":
        print(f"minimal.py: unknown workload `{req.get('workload')}`; this client has `noop`", file=sys.stderr)
        sys.exit(2)
    busy = int(req.get("params", {}).get("busy_ns", 0))
    measure = req["measure"]
    emit({"hello": {"protocol": 1, "client": f"minimal.py / python {sys.version.split()[0]}"}})

    latency = Counter()

    def one(measured):
        t0 = time.perf_counter_ns()
        while time.perf_counter_ns() - t0 < busy:
            pass
        if measured:
            latency[round3(time.perf_counter_ns() - t0)] += 1

    warmup = measured = 0
    emit({"mark": "warmup"})
    if measure["mode"] == "transactions":
        for warmup in range(1, measure["warmup"] + 1):
            one(False)
        emit({"mark": "measured"})
        start = time.perf_counter()
        for measured in range(1, measure["measured"] + 1):
            one(True)
    elif measure["mode"] == "window":
        end = time.perf_counter() + measure["warmup_s"]
        while time.perf_counter() < end:
            one(False)
            warmup += 1
        emit({"mark": "measured"})
        start = time.perf_counter()
        end = start + measure["measured_s"]
        while time.perf_counter() < end:
            one(True)
            measured += 1
    else:
        print(f"minimal.py: unknown measure mode `{measure['mode']}`", file=sys.stderr)
        sys.exit(2)
    elapsed = time.perf_counter() - start
    emit({"mark": "measured-end"})
    emit({"result": {
        "warmup": warmup, "measured": measured, "measured_s": elapsed,
        "errors": 0, "errors_by_kind": {}, "retries": 0, "counters": {},
        "latency_ns": [[v, n] for v, n in latency.items()],
    }})


if __name__ == "__main__":
    main()
