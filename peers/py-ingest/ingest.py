#!/usr/bin/env python3
"""py-ingest: seed 004's ingest client on grpcio, as a blocklab process arm
(protocol v1, docs/process-arms.md).

Usage: blocklab spawns it with the run request on stdin, e.g.

    [[arms]]
    name = "grpcio-shared"
    client = { kind = "process", command = ["python3", "peers/py-ingest/ingest.py"] }
    target = { kind = "grpc", endpoint = "local:grpc-ingest", connections = "shared" }

By hand: `echo '{"protocol":1,"workload":"ingest","target":{"kind":"grpc",
"endpoint":"http://127.0.0.1:50051","connections":"shared"},"params":{},"seed":1,
"workers":4,"measure":{"mode":"window","warmup_s":1,"measured_s":3},
"call_deadline_ms":10000}' | peers/py-ingest/ingest.py` (needs grpcio:
`make deps-python`).

Workloads, the same as the grpc-ingest plugin's
(crates/ingest/src/ingest.rs) and peers/go-ingest:
  - `ingest`: one /ingest.v1.Ingest/Stream per worker; each transaction sends
    one batch of `batch_records` records of `record_bytes` bytes with gapless
    offsets, first waiting for acks while more than `max_in_flight` records
    would be unacknowledged. Counters `acked_records`, `acked_bytes` (window
    deltas). A transaction's latency is the plugin's: from its start (the
    wait for room included) to its batch sent. Each measured batch's send to
    the first ack covering it goes to histogram `ack_latency_ns`. After the
    window (after the measured-end mark) each worker half-closes its stream,
    on which the server acks all it has, and reads the acks of its measured
    batches. A failed transaction is one error; batches a broken stream never
    acknowledged are not (they were sent), as in the plugin.
  - `unary` (alias `echo`): one /ingest.v1.Echo/Echo of `payload_bytes` bytes.

Every measure mode. In `rate` mode each worker keeps its share of the
request's `schedule` (docs/process-arms.md, "Rate mode"): it starts each
transaction (`ingest`: a batch, so records/s = rate x batch_records) at its
intended time, or as soon as it is free when behind, never skipping one;
latency counts from the intended start to the transaction's end (the batch
sent, or the reply), service time from the actual start. Connection policies (`target.connections`): "shared" =
one channel, "per-stream" = one channel per stream (per worker; unary calls
share one, as blocklab's own client does), N = a pool of N channels,
workers round-robin. Every channel has its own subchannel pool
(`grpc.use_local_subchannel_pool`), else grpcio would share one TCP
connection between channels to the same address. Messages are encoded by
hand (bytes in, bytes out; no generated code).

`call_deadline_ms` bounds connecting and each unary call; a stalled stream
is bounded by the host's `run_timeout_s`, which kills the process group.
Exit status: 0 after the result, 2 for a request this client cannot serve
(unknown workload, param, mode or policy), 1 when the run fails (connect,
setup, warmup, a duet's broken start barrier). In a duet it waits at the
request's `start_barrier` once its streams are open, before its warmup.

Each worker is a Python thread: the GIL, and grpcio's own threads that feed
a streaming call from its request iterator, are part of what this arm
measures.
"""
import json
import os
import queue
import random
import socket
import sys
import threading
import time
from collections import Counter

STREAM_METHOD = "/ingest.v1.Ingest/Stream"
ECHO_METHOD = "/ingest.v1.Echo/Echo"
DEFAULTS = {
    "ingest": {"record_bytes": 1024, "batch_records": 64, "max_in_flight": 4096,
               "max_message_bytes": 4194304},
    "unary": {"payload_bytes": 64},
}


def usage(message):
    """Exit 2: the request asks for something this client does not do."""
    print(f"py-ingest: {message}", file=sys.stderr, flush=True)
    os._exit(2)


def fatal(message):
    """Exit 1: the run failed (setup, warmup). os._exit: from any thread."""
    print(f"py-ingest: {message}", file=sys.stderr, flush=True)
    os._exit(1)


def await_start(path):
    """A duet's start barrier (docs/process-arms.md, "Duets"): wait until
    the host releases every partner run. Byte 1 is go; end-of-file (or a
    barrier already gone) means a partner failed, and this run must not
    measure alone."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(path)
            if s.recv(1) == b"\x01":
                return
        why = ""
    except OSError as e:
        why = f" ({e})"
    fatal(f"the duet's start barrier was broken{why}: a partner run failed before it could "
          "start, so this one does not measure alone")


class Callgrind:
    """A counted run's window switch (docs/process-arms.md, "Counted
    runs"): Valgrind's CALLGRIND_START_INSTRUMENTATION, and
    CALLGRIND_DUMP_STATS then CALLGRIND_STOP_INSTRUMENTATION, client
    requests. A request is a magic
    instruction sequence (valgrind.h) that Python cannot execute, so it is
    written as x86-64 machine code into an executable page and called
    through ctypes; natively it does nothing. The same code is in
    peers/examples/minimal.py."""

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
        import platform
        if platform.machine() != "x86_64":
            print(f"{sys.argv[0]}: counted runs issue x86-64 client requests; this is {platform.machine()}",
                  file=sys.stderr)
            sys.exit(2)
        self.page, self.call = executable(self.CODE, ctypes.c_void_p)
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


def executable(code, argtype):
    """x86-64 machine code in an executable page of its own, as a ctypes
    function of one argument returning a u64; the page must outlive it."""
    import ctypes
    import mmap
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    return page, ctypes.CFUNCTYPE(ctypes.c_uint64, argtype)(address)


class Injected:
    """A test arm's known work before each transaction (the request's
    `inject_loop_iterations`, docs/process-arms.md "Injected work"): n
    iterations of `dec`, `jnz` between two `lfence`s, the loop blocklab's
    own worker runs, as machine code: a Python loop's instructions per
    iteration are the interpreter's, not known. The ctypes call around it
    costs the same in every transaction."""

    CODE = bytes([
        0x48, 0x85, 0xFF,        # test rdi, rdi
        0x74, 0x0B,              # jz ret
        0x0F, 0xAE, 0xE8,        # lfence
        0x48, 0xFF, 0xCF,        # dec rdi
        0x75, 0xFB,              # jnz dec
        0x0F, 0xAE, 0xE8,        # lfence
        0xC3,                    # ret
    ])

    def __init__(self, worker, n):
        import ctypes
        import platform
        if platform.machine() != "x86_64":
            usage(f"`inject_loop_iterations` runs x86-64 machine code; this is {platform.machine()}")
        self.page, self.loop = executable(self.CODE, ctypes.c_uint64)
        self.worker = worker
        self.n = n

    def run(self, tally, measured, at=None):
        self.loop(self.n)
        return self.worker.run(tally, measured, at)

    def __getattr__(self, name):
        return getattr(self.worker, name)


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


# --- ingest.v1 wire format (host/proto/ingest.proto) ---

def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def encode_batch(first, n, payload):
    """Batch{records: n Records from offset `first`, each with `payload`}."""
    tail = (b"\x12" + varint(len(payload)) + payload) if payload else b""
    parts = []
    for off in range(first, first + n):
        # proto3 leaves default values (offset 0, empty payload) out.
        record = (b"\x08" + varint(off) if off else b"") + tail
        parts.append(b"\x0a" + varint(len(record)) + record)
    return b"".join(parts)


def batch_len_bound(n, payload_len):
    p = 1 + len(varint(payload_len)) + payload_len if payload_len else 0
    rec = 11 + p
    return n * (1 + len(varint(rec)) + rec)


def fields(b):
    """Yields (field number, varint value or bytes) of a message."""
    at = 0

    def get():
        nonlocal at
        v = shift = 0
        while True:
            if at >= len(b):
                raise ValueError("a message ends inside a varint (malformed protobuf)")
            c = b[at]
            at += 1
            v |= (c & 0x7F) << shift
            if c < 0x80:
                return v
            shift += 7
            if shift >= 70:
                raise ValueError("a varint is longer than 10 bytes (malformed protobuf)")

    while at < len(b):
        key = get()
        if key & 7 == 0:
            yield key >> 3, get()
        elif key & 7 == 2:
            n = get()
            if at + n > len(b):
                raise ValueError("a field runs past the end of its message (malformed protobuf)")
            yield key >> 3, b[at:at + n]
            at += n
        else:
            raise ValueError(f"unexpected wire type {key & 7} (malformed protobuf)")


def decode_ack(b):
    return next((v for num, v in fields(b) if num == 1), 0)


def decode_echo_len(b):
    return next((len(v) for num, v in fields(b) if num == 1), 0)


# --- rate mode ---

# A start this much after its intended time is late (docs/process-arms.md).
LATE_NS = 1_000_000


def intended_starts(schedule, share):
    """Worker `share`'s intended starts, seconds after the warmup mark.
    Poisson gaps come from Python's own seeded generator: the same seed gives
    the same schedule here, not in other languages."""
    w = schedule["workers"][share]
    rate, t = w["rate_per_s"], w["phase_s"]
    if schedule["arrival"] == "poisson":
        rng = random.Random(w["seed"])
        while True:
            t += rng.expovariate(rate)
            yield t
    k = 0
    while True:
        yield t + k / rate  # no accumulated rounding
        k += 1


def wait_until(deadline_ns):
    """Sleeps for the bulk, then spins the last millisecond: a sleep may
    wake late by its timer slack, a spin does not."""
    while True:
        left = deadline_ns - time.perf_counter_ns()
        if left <= 0:
            return
        time.sleep((left - LATE_NS) / 1e9 if left > 2 * LATE_NS else 0)


def rate_loop(w, t, starts, t0, warm_end, end):
    """Keeps one worker's schedule from t0 (the warmup mark, ns) to end; a
    start the window's end overtook is scheduled but not started. Returns
    the worker's counters when its measured part began."""
    before = None
    for s in starts:
        intended = t0 + int(s * 1e9)
        if intended >= end:
            break
        measured = intended >= warm_end
        if measured and before is None:
            wait_until(warm_end)
            before = w.counters()
            t.batch_by(0, end - warm_end, warm_end)
        t.scheduled += measured
        if time.perf_counter_ns() >= end:
            continue
        wait_until(intended)
        began = time.perf_counter_ns()
        try:
            w.run(t, measured, (intended, began))
        except Failed as e:
            if not measured:
                fatal(f"warmup failed: {e}")
            t.fail(str(e))
        if not measured:
            t.warmup += 1
            continue
        t.started += 1
        t.measured += 1
        t.late += began - intended > LATE_NS
        t.lag[round3(began - intended)] += 1
    if before is None:
        wait_until(warm_end)
        before = w.counters()
    wait_until(end)
    return before


# --- results ---

def round3(v):
    """Keeps 3 significant digits, as the protocol asks of latencies."""
    m = 1
    while v // m >= 1000:
        m *= 10
    return (v + m // 2) // m * m


def describe(e, method):
    """A grpc error in blocklab's words, `UNIMPLEMENTED (12) on METHOD:
    details` (crates/catalog/src/status.rs), so each client's errors group
    alike in `errors_by_kind`; any other exception as its text."""
    import grpc
    if isinstance(e, grpc.RpcError) and hasattr(e, "code"):
        code, details = e.code(), e.details()
        said = f": {details}" if details else " (the server sent no message)"
        return f"{code.name} ({code.value[0]}) on {method}{said}"
    return str(e)


# Batches per worker, as blocklab's own workers cut them (run::batches).
BATCHES = 64


class Tally:
    def __init__(self):
        self.warmup = self.measured = self.errors = 0
        self.errors_by_kind = Counter()
        self.latency = Counter()
        # ingest: each measured batch's send to the first ack covering it.
        self.ack = Counter()
        self.counters = {}
        # Rate mode only.
        self.scheduled = self.started = self.late = 0
        self.lag, self.service = Counter(), Counter()
        # The measured window in batches (docs/process-arms.md, "Batches"):
        # every `batch_size` transactions, or every `batch_slice` ns.
        self.batch_size = self.batch_slice = 0
        self.batch_start = None
        self.batch_count = self.batch_latency = 0
        self.batches = {"count": [], "latency_ns": [], "wall_ns": []}

    def batch_by(self, measured, window_ns, start):
        """Cuts the measured window into BATCHES batches of a worker's
        `measured` transactions, or of `window_ns` of time."""
        if measured:
            self.batch_size = -(-measured // BATCHES)
        else:
            self.batch_slice = window_ns // BATCHES
        self.batch_start = start

    def close_batch(self, now):
        if not self.batch_count:
            return
        self.batches["count"].append(self.batch_count)
        self.batches["latency_ns"].append(self.batch_latency)
        self.batches["wall_ns"].append(max(1, now - self.batch_start))
        self.batch_start, self.batch_count, self.batch_latency = now, 0, 0

    def done(self, now, began, at):
        """A measured transaction ended at `now`: latency from its intended
        start in rate mode (`at` = (intended, began), and service time from
        its actual start), else from `began`."""
        if at is None:
            ns = now - began
        else:
            ns = now - at[0]
            self.service[round3(now - at[1])] += 1
        self.latency[round3(ns)] += 1
        if self.batch_start is None:
            return
        self.batch_count += 1
        self.batch_latency += ns
        if (self.batch_size and self.batch_count >= self.batch_size) or (
                self.batch_slice and now - self.batch_start >= self.batch_slice):
            self.close_batch(now)

    def fail(self, message):
        """A measured transaction failed with `message`."""
        self.errors += 1
        self.errors_by_kind[message.split("\n", 1)[0]] += 1


class Failed(Exception):
    """One transaction failed; the message's first line is its kind."""


# --- workloads ---

class Ingest:
    def __init__(self, channel, p, payload, rate=False):
        self.call = channel.stream_stream(STREAM_METHOD, request_serializer=None,
                                          response_deserializer=None)
        self.record_bytes = p["record_bytes"]
        self.batch_records = p["batch_records"]
        self.max_in_flight = p["max_in_flight"]
        self.payload = payload
        self.acked_records = self.acked_bytes = 0
        self.responses = None
        # Rate mode: a thread per stream reads acks as they arrive and
        # stamps them, since a worker waiting for its next intended start is
        # not reading (closed loop reads only when the in-flight limit makes
        # it wait, as the plugin does).
        self.rate = rate
        self.acks = None
        self.open()

    def open(self):
        self.requests = queue.SimpleQueue()
        requests = self.requests

        def feed():
            while (item := requests.get()) is not None:
                yield item

        self.responses = self.call(feed())
        self.next = self.acked = 0
        self.in_flight = []  # (end offset, send time ns, measured)
        self.head = 0  # in_flight[head:] are unacknowledged
        if self.rate:
            acks = self.acks = queue.SimpleQueue()
            responses = self.responses

            def read():
                try:
                    for message in responses:
                        acks.put((message, None, time.perf_counter_ns()))
                    acks.put((None, StopIteration(), time.perf_counter_ns()))
                except Exception as e:  # grpc.RpcError
                    acks.put((None, e, time.perf_counter_ns()))

            threading.Thread(target=read, daemon=True).start()

    def broken(self):
        """Drops the stream. Its unacknowledged batches are lost, but their
        transactions succeeded (they were sent); the transaction that found
        the stream broken is the error, as in the plugin."""
        self.requests.put(None)
        self.responses.cancel()
        self.responses = None

    def next_ack(self):
        """The next message from the stream and when it arrived."""
        if self.acks is None:
            message = next(self.responses)
            return message, time.perf_counter_ns()
        message, error, at = self.acks.get()
        if error is not None:
            raise error
        return message, at

    def await_ack(self, tally):
        try:
            message, now = self.next_ack()
        except StopIteration:
            raise Failed(f"the server ended the ingest stream with records unacknowledged\n"
                         f"{self.next} sent, {self.acked} acknowledged") from None
        except Exception as e:  # grpc.RpcError
            raise Failed(f"ingest stream failed: {describe(e, STREAM_METHOD)}") from None
        try:
            ack = decode_ack(message)
        except ValueError as e:
            raise Failed(str(e)) from None
        if ack < self.acked:
            raise Failed("ack went backwards: it covers fewer records than an earlier ack\n"
                         f"ack up to offset {ack}, after one up to {self.acked}")
        if ack > self.next:
            raise Failed("ack beyond what was sent: it covers records never sent\n"
                         f"ack up to offset {ack}, {self.next} sent")
        self.acked_records += ack - self.acked
        self.acked_bytes += (ack - self.acked) * self.record_bytes
        self.acked = ack
        while self.head < len(self.in_flight) and self.in_flight[self.head][0] <= ack:
            _, sent, measured = self.in_flight[self.head]
            if measured:
                tally.ack[round3(now - sent)] += 1
            self.head += 1
        if self.head > 1024:
            del self.in_flight[:self.head]
            self.head = 0

    def run(self, tally, measured, at=None):
        t0 = time.perf_counter_ns()
        if self.responses is None:
            self.open()
        try:
            while (self.next + self.batch_records - self.acked > self.max_in_flight
                   or (self.acks is not None and not self.acks.empty())):
                self.await_ack(tally)
            if self.responses.done():
                # The server ended the call: read the acks it sent before,
                # then its status, which says why (await_ack raises it).
                while True:
                    self.await_ack(tally)
        except Failed:
            self.broken()
            raise
        batch = encode_batch(self.next, self.batch_records, self.payload)
        self.requests.put(batch)
        self.next += self.batch_records
        sent = time.perf_counter_ns()
        self.in_flight.append((self.next, sent, measured))
        if measured:
            tally.done(sent, t0, at)

    def counters(self):
        return {"acked_records": self.acked_records, "acked_bytes": self.acked_bytes}

    def drain(self, tally):
        """Half-closes the stream, on which the server acknowledges all it
        has (a server acking every N records would otherwise leave the last
        few unacknowledged forever), and reads the acks still in flight."""
        if self.responses is not None:
            self.requests.put(None)
        while self.responses is not None and self.head < len(self.in_flight):
            try:
                self.await_ack(tally)
            except Failed:
                self.broken()
        if self.responses is not None:
            self.requests.put(None)
            self.responses.cancel()


class Echo:
    def __init__(self, channel, payload, deadline_s):
        self.call = channel.unary_unary(ECHO_METHOD, request_serializer=None,
                                        response_deserializer=None)
        self.request = b"\x0a" + varint(len(payload)) + payload if payload else b""
        self.size = len(payload)
        self.deadline_s = deadline_s

    def run(self, tally, measured, at=None):
        t0 = time.perf_counter_ns()
        try:
            response = self.call(self.request, timeout=self.deadline_s)
        except Exception as e:  # grpc.RpcError
            raise Failed(f"echo failed: {describe(e, ECHO_METHOD)}") from None
        now = time.perf_counter_ns()
        n = decode_echo_len(response)
        if n != self.size:
            raise Failed(f"echo returned {n} bytes for {self.size} sent")
        if measured:
            tally.done(now, t0, at)

    def counters(self):
        return {}

    def drain(self, tally):
        pass


def params(workload, given):
    defaults = DEFAULTS[workload]
    out = dict(defaults)
    for k, v in given.items():
        if k not in defaults:
            names = ", ".join(f"`{n}`" for n in sorted(defaults))
            usage(f"unknown param `{k}` for workload `{workload}`; it takes {names}")
        # A number, or its digits as text (plan params may be either).
        if isinstance(v, str) and v.strip().isdigit():
            v = int(v)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            usage(f"param `{k}` must be a non-negative integer, not {json.dumps(v)}")
        out[k] = v
    return out


def channels(req, grpc):
    target = req["target"]
    policy = target.get("connections", "shared")
    if isinstance(policy, str) and policy.isdigit():
        policy = int(policy)
    if policy == "shared":
        n = 1
    elif policy == "per-stream":
        # A channel per stream; unary calls are no streams and share one,
        # as blocklab's own client does (docs/grpc.md).
        n = req["workers"] if req["workload"] == "ingest" else 1
    elif isinstance(policy, int) and not isinstance(policy, bool) and policy >= 1:
        n = policy
    else:
        usage("`target.connections` must be \"shared\", \"per-stream\" or a pool size "
              f"of at least 1, not {json.dumps(policy)}")
    endpoint = target.get("endpoint", "")
    if endpoint.startswith("https://"):
        usage(f"endpoint `{endpoint}`: this client speaks plaintext only; use an http:// endpoint")
    address = endpoint.removeprefix("http://")
    deadline_s = req.get("call_deadline_ms", 10000) / 1000
    out = []
    for _ in range(n):
        # A local subchannel pool per channel: one TCP connection each.
        channel = grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])
        try:
            grpc.channel_ready_future(channel).result(timeout=deadline_s)
        except grpc.FutureTimeoutError:
            fatal(f"cannot connect to `{endpoint}` within call_deadline_ms "
                  f"({req.get('call_deadline_ms', 10000)})")
        out.append(channel)
    return out


def crashed(args):
    """A worker or reader thread that dies of an unexpected exception ends
    the run with it: the others would wait for it at a barrier forever."""
    import traceback
    trace = "".join(traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback))
    fatal(f"thread {args.thread.name if args.thread else '?'} failed:\n{trace}")


def main():
    threading.excepthook = crashed
    try:
        req = json.load(sys.stdin)
    except ValueError as e:
        usage(f"cannot read the run request on stdin: {e}")
    if req.get("protocol") != 1:
        usage(f"speaks protocol 1, the request is protocol {req.get('protocol')}")
    if req.get("target", {}).get("kind") != "grpc":
        usage(f"target kind `{req.get('target', {}).get('kind')}`: this client needs a `grpc` target")
    workload = req.get("workload")
    if workload == "echo":
        workload = "unary"
    if workload not in DEFAULTS:
        usage(f"unknown workload `{req.get('workload')}`; this client has `ingest` and `unary` (alias `echo`)")
    p = params(workload, req.get("params", {}))
    if workload == "ingest":
        if p["batch_records"] == 0:
            usage("`batch_records` must be at least 1")
        bound = batch_len_bound(p["batch_records"], p["record_bytes"])
        if bound > p["max_message_bytes"]:
            usage(f"a batch of `batch_records` ({p['batch_records']}) records of `record_bytes` "
                  f"({p['record_bytes']}) bytes encodes to up to {bound} bytes, over "
                  f"`max_message_bytes` ({p['max_message_bytes']}); lower `batch_records` or `record_bytes`")
        if p["max_in_flight"] < p["batch_records"]:
            usage(f"`max_in_flight` ({p['max_in_flight']}) must be at least `batch_records` ({p['batch_records']})")
    if req.get("counters") == "callgrind":
        global COUNTED
        COUNTED = Callgrind()
    measure = req.get("measure", {})
    if measure.get("mode") not in ("transactions", "window", "rate"):
        usage(f"unknown measure mode `{measure.get('mode')}`; use `transactions`, `window` or `rate`")
    workers_n = req.get("workers", 1)
    if not isinstance(workers_n, int) or workers_n < 1:
        usage("`workers` must be at least 1")
    rate = measure["mode"] == "rate"
    if rate and len(req.get("schedule", {}).get("workers", [])) != workers_n:
        usage("rate mode needs the request's `schedule` with one share per worker")

    import grpc  # after the checks: a bad request is refused even without grpcio
    emit({"hello": {"protocol": 1,
                    "client": f"grpcio {grpc.__version__} / python {sys.version.split()[0]}",
                    "modes": ["transactions", "window", "rate"],
                    "features": ["inject-loop", "start-barrier"]}})

    rng = random.Random(req.get("seed", 0))
    chans = channels(req, grpc)
    deadline_s = req.get("call_deadline_ms", 10000) / 1000
    workers = []
    for i in range(workers_n):
        channel = chans[i % len(chans)]
        if workload == "ingest":
            workers.append(Ingest(channel, p, rng.randbytes(p["record_bytes"]), rate))
        else:
            workers.append(Echo(channel, rng.randbytes(p["payload_bytes"]), deadline_s))
        if req.get("inject_loop_iterations", 0) > 0:
            workers[-1] = Injected(workers[-1], req["inject_loop_iterations"])
    if "start_barrier" in req:
        await_start(req["start_barrier"])

    def split(total, i):
        return total // workers_n + (1 if i < total % workers_n else 0)

    tallies = [Tally() for _ in workers]
    warmed = threading.Barrier(workers_n + 1)
    start = threading.Event()
    windowed = threading.Barrier(workers_n + 1)

    def drive_rate(i, w, t):
        starts = intended_starts(req["schedule"], i)
        before = rate_loop(w, t, starts, t0, warm_end, end)
        t.counters = {k: v - before.get(k, 0) for k, v in w.counters().items()}
        windowed.wait()
        w.drain(t)
        t.close_batch(time.perf_counter_ns())

    def drive(i, w, t):
        try:
            if measure["mode"] == "transactions":
                for _ in range(split(measure["warmup"], i)):
                    w.run(t, False)
                    t.warmup += 1
            else:
                end = time.perf_counter() + measure["warmup_s"]
                while time.perf_counter() < end:
                    w.run(t, False)
                    t.warmup += 1
        except Failed as e:
            fatal(f"warmup failed: {e}")
        warmed.wait()
        start.wait()
        if measure["mode"] == "transactions":
            t.batch_by(split(measure["measured"], i), 0, time.perf_counter_ns())
        else:
            t.batch_by(0, int(measure["measured_s"] * 1e9), time.perf_counter_ns())
        before = w.counters()

        def one():
            try:
                w.run(t, True)
            except Failed as e:
                t.fail(str(e))
            t.measured += 1

        if measure["mode"] == "transactions":
            for _ in range(split(measure["measured"], i)):
                one()
        else:
            end = time.perf_counter() + measure["measured_s"]
            while time.perf_counter() < end:
                one()
        t.counters = {k: v - before.get(k, 0) for k, v in w.counters().items()}
        windowed.wait()
        w.drain(t)
        t.close_batch(time.perf_counter_ns())

    threads = [threading.Thread(target=drive_rate if rate else drive, args=(i, w, t), daemon=True)
               for i, (w, t) in enumerate(zip(workers, tallies))]
    if rate:
        # The schedule's origin (the warmup mark) and window, ns; read by
        # drive_rate once its thread starts.
        t0 = time.perf_counter_ns()
        warm_end = t0 + int(measure["warmup_s"] * 1e9)
        end = warm_end + int(measure["measured_s"] * 1e9)
    emit({"mark": "warmup"})
    for th in threads:
        th.start()
    if rate:
        wait_until(warm_end)
    else:
        warmed.wait()
    emit({"mark": "measured"})
    started = time.perf_counter()
    start.set()
    windowed.wait()
    elapsed = time.perf_counter() - started
    emit({"mark": "measured-end"})
    for th in threads:
        th.join()

    errors_by_kind, latency, ack, counters = Counter(), Counter(), Counter(), Counter()
    for t in tallies:
        errors_by_kind.update(t.errors_by_kind)
        latency.update(t.latency)
        ack.update(t.ack)
        counters.update(t.counters)
    pairs = [[v, n] for v, n in latency.items()]
    result = {
        "warmup": sum(t.warmup for t in tallies),
        "measured": sum(t.measured for t in tallies),
        "measured_s": elapsed,
        "errors": sum(t.errors for t in tallies),
        "errors_by_kind": dict(errors_by_kind),
        "retries": 0,
        "counters": {k: counters.get(k, 0) for k in workers[0].counters()},
        "latency_ns": pairs,
    }
    batches = {k: [x for t in tallies for x in t.batches[k]] for k in ("count", "latency_ns", "wall_ns")}
    if batches["count"]:
        result["batches"] = batches
    if workload == "ingest":
        result["histograms"] = {"ack_latency_ns": [[v, n] for v, n in ack.items()]}
    if rate:
        lag, service = Counter(), Counter()
        for t in tallies:
            lag.update(t.lag)
            service.update(t.service)
        result["open_loop"] = {
            "scheduled": sum(t.scheduled for t in tallies),
            "started": sum(t.started for t in tallies),
            "late": sum(t.late for t in tallies),
            "start_lag_ns": [[v, n] for v, n in lag.items()],
            "service_ns": [[v, n] for v, n in service.items()],
        }
    emit({"result": result})
    for channel in chans:
        channel.close()


if __name__ == "__main__":
    main()
