#!/usr/bin/env python3
"""minimal.py: the smallest correct blocklab process-arm client (protocol v1,
docs/process-arms.md), standard library only.

Workload `noop`: each transaction busy-waits `busy_ns` nanoseconds (param,
default 0). Every measure mode: `transactions` (warmup, then measured
transactions, totals over all workers), `window` (warmup_s, then
measured_s seconds) and `rate` (the request's `schedule`: each transaction
starts at its intended time, latency counts from that time). It runs its
transactions on one thread whatever `workers` says (in rate mode: every
worker's share of the schedule, merged). In a duet it waits at the
request's `start_barrier` before its warmup. Run:
`python3 peers/examples/minimal.py < request.json`.
"""
import heapq
import json
import random
import socket
import sys
import time
from collections import Counter

# A start this much after its intended time is late (docs/process-arms.md).
LATE_NS = 1_000_000


class Callgrind:
    """A counted run's window switch (docs/process-arms.md, "Counted
    runs"): Valgrind's CALLGRIND_START_INSTRUMENTATION, and
    CALLGRIND_DUMP_STATS then CALLGRIND_STOP_INSTRUMENTATION, client
    requests. A request is a magic
    instruction sequence (valgrind.h) that Python cannot execute, so it is
    written as x86-64 machine code into an executable page and called
    through ctypes; natively it does nothing. The same code is in
    peers/py-ingest/ingest.py."""

    CODE = bytes([
        0x48, 0x89, 0xF8,        # mov rax, rdi  (the six request words)
        0x31, 0xD2,              # xor edx, edx  (the answer when native)
        0x48, 0xC1, 0xC7, 0x03,  # rol rdi, 3
        0x48, 0xC1, 0xC7, 0x0D,  # rol rdi, 13
        0x48, 0xC1, 0xC7, 0x3D,  # rol rdi, 61
        0x48, 0xC1, 0xC7, 0x33,  # rol rdi, 51
        0x48, 0x87, 0xDB,        # xchg rbx, rbx: the request
        0x48, 0x89, 0xD0,        # mov rax, rdx
        0xC3,                    # ret
    ])
    # VG_USERREQ_TOOL_BASE('C', 'T') + 0, + 4 and + 5 (callgrind.h).
    DUMP = ord("C") << 24 | ord("T") << 16
    START = DUMP + 4
    STOP = DUMP + 5

    def __init__(self):
        import ctypes
        import mmap
        import platform
        if platform.machine() != "x86_64":
            print(f"{sys.argv[0]}: counted runs issue x86-64 client requests; this is {platform.machine()}",
                  file=sys.stderr)
            sys.exit(2)
        self.page = mmap.mmap(-1, mmap.PAGESIZE,
                              prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        self.page.write(self.CODE)
        address = ctypes.addressof(ctypes.c_char.from_buffer(self.page))
        self.call = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p)(address)
        self.ctypes = ctypes

    def request(self, code):
        args = (self.ctypes.c_uint64 * 6)(code, 0, 0, 0, 0, 0)
        self.call(self.ctypes.addressof(args))

    def start(self):
        self.request(self.START)

    def stop(self):
        # The dump holds the window; callgrind's own summary at exit after
        # a stop is not usable (host/src/machine/valgrind.rs).
        self.request(self.DUMP)
        self.request(self.STOP)


# Set by main when the request says `"counters": "callgrind"`.
COUNTED = None


def emit(event):
    # The window is exactly the measured transactions: instrumentation on
    # after the `measured` mark is written, off before `measured-end`.
    if COUNTED and event.get("mark") == "measured-end":
        COUNTED.stop()
    print(json.dumps(event), flush=True)
    if COUNTED and event.get("mark") == "measured":
        COUNTED.start()


def await_start(path):
    """A duet's start barrier (docs/process-arms.md, "Duets"): waits until
    the host releases every partner run. Byte 1 is go; end-of-file
    (or a barrier already gone) means a partner failed, and this run must
    not measure alone. The same code is in peers/py-ingest/ingest.py: this
    file stands alone."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(path)
            if s.recv(1) == b"\x01":
                return
        why = ""
    except OSError as e:
        why = f" ({e})"
    print(f"minimal.py: the duet's start barrier was broken{why}: a partner run failed "
          "before it could start, so this one does not measure alone", file=sys.stderr)
    sys.exit(1)


def round3(v):
    """Keeps 3 significant digits, as the protocol asks of latencies."""
    m = 1
    while v // m >= 1000:
        m *= 10
    return (v + m // 2) // m * m


def intended_starts(schedule):
    """Every worker's intended starts, merged in time order: seconds after
    the `warmup` mark. Poisson gaps come from Python's own seeded generator
    (the same seed gives the same schedule here, not in other languages)."""
    heap = []
    for i, share in enumerate(schedule["workers"]):
        rng, rate = random.Random(share["seed"]), share["rate_per_s"]
        if schedule["arrival"] == "poisson":
            def stream(rng=rng, rate=rate, t=share["phase_s"]):
                while True:
                    t += rng.expovariate(rate)
                    yield t
        else:
            def stream(rate=rate, phase=share["phase_s"]):
                k = 0
                while True:
                    yield phase + k / rate  # no accumulated rounding
                    k += 1
        it = stream()
        heap.append((next(it), i, it))
    heapq.heapify(heap)
    while heap:
        t, i, it = heap[0]
        yield t
        heapq.heapreplace(heap, (next(it), i, it))


def wait_until(deadline_ns):
    """Sleeps for the bulk, then spins the last millisecond: a sleep may
    wake late by its timer slack, a spin does not."""
    while True:
        left = deadline_ns - time.perf_counter_ns()
        if left <= 0:
            return
        if left > 2 * LATE_NS:
            time.sleep((left - LATE_NS) / 1e9)


def run_rate(measure, schedule, one):
    """Rate mode: returns (warmup, measured_s, open_loop, latency)."""
    t0 = time.perf_counter_ns()
    warm_end = t0 + int(measure["warmup_s"] * 1e9)
    end = warm_end + int(measure["measured_s"] * 1e9)
    latency, lag, service = Counter(), Counter(), Counter()
    warmup = scheduled = started = late = 0
    start = None
    for t in intended_starts(schedule):
        intended = t0 + int(t * 1e9)
        if intended >= end:
            break
        measured = intended >= warm_end
        if measured and start is None:
            wait_until(warm_end)
            emit({"mark": "measured"})
            # The window is the schedule's, even when a worker still busy
            # with warmup marks it late.
            start = warm_end
        scheduled += measured
        # Never skipped while behind; a start the window's end overtook is
        # scheduled but not started.
        if time.perf_counter_ns() >= end:
            continue
        wait_until(intended)
        began = time.perf_counter_ns()
        one(False)
        done = time.perf_counter_ns()
        if not measured:
            warmup += 1
            continue
        started += 1
        late += began - intended > LATE_NS
        lag[round3(began - intended)] += 1
        service[round3(done - began)] += 1
        latency[round3(done - intended)] += 1
    if start is None:
        wait_until(warm_end)
        emit({"mark": "measured"})
        start = warm_end
    wait_until(end)
    open_loop = {
        "scheduled": scheduled, "started": started, "late": late,
        "start_lag_ns": [[v, n] for v, n in lag.items()],
        "service_ns": [[v, n] for v, n in service.items()],
    }
    return warmup, (time.perf_counter_ns() - start) / 1e9, open_loop, latency


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
    if req.get("counters") == "callgrind":
        global COUNTED
        COUNTED = Callgrind()
    measure = req["measure"]
    emit({"hello": {"protocol": 1, "client": f"minimal.py / python {sys.version.split()[0]}",
                    "modes": ["transactions", "window", "rate"], "features": ["start-barrier"]}})

    latency = Counter()

    def one(measured):
        t0 = time.perf_counter_ns()
        while time.perf_counter_ns() - t0 < busy:
            pass
        if measured:
            latency[round3(time.perf_counter_ns() - t0)] += 1

    warmup = measured = 0
    extra = {}
    if "start_barrier" in req:
        await_start(req["start_barrier"])
    emit({"mark": "warmup"})
    if measure["mode"] == "rate":
        warmup, elapsed, extra["open_loop"], latency = run_rate(measure, req["schedule"], one)
        measured = sum(latency.values())
    elif measure["mode"] == "transactions":
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
    if measure["mode"] != "rate":
        elapsed = time.perf_counter() - start
    emit({"mark": "measured-end"})
    emit({"result": {
        "warmup": warmup, "measured": measured, "measured_s": elapsed,
        "errors": 0, "errors_by_kind": {}, "retries": 0, "counters": {},
        "latency_ns": [[v, n] for v, n in latency.items()], **extra,
    }})


if __name__ == "__main__":
    main()
