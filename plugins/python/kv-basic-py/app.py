"""kv-basic-py: four of kv-basic's workloads (grv, get100, set100, ryw) as a
Python workload plugin on WIT 0.3.0, built with componentize-py and
blocklab's Python SDK (plugins/python/sdk/blocklab.py), plus test-only
workloads for blocklab's tests of the SDK: `throws` (an uncaught
exception), `holds` (a transaction released by teardown), `calls` (futures, an atomic add, a selector, a versionstamp and
a watch, each checked) and `echo` (a gRPC unary call).

The key layout, values, params and random draws are kv-basic's
(plugins/workloads/kv-basic/src/catalog.rs), so the same seed touches the
same keys in both plugins and a campaign can compare them arm against arm.
"""

from blocklab import (
    Err,
    Transaction,
    env,
    first_greater_or_equal,
    join_all,
    param_int,
    random_u64,
    call,
    open_stream,
    transact,
    unary,
    workloads,
)

KEYS_HELP = "fixture keys; each transaction picks one with env random_u64 % keys"
VALUE_HELP = "bytes per value"
# Most fixture bytes (keys plus values) in one setup transaction, as in
# catalog.rs: well inside FoundationDB's 10 MB limit.
FIXTURE_TRANSACTION_BYTES = 1_000_000
MAX_KEYS = 500_000  # as kv-basic's catalog.rs: what setup writes within the default deadline
MAX_VALUE_BYTES = 100_000
TEST_ONLY = "test-only, for blocklab's tests of the Python SDK: "


def sized(value_bytes):
    return [("keys", "1000", KEYS_HELP), ("value-bytes", value_bytes, VALUE_HELP)]


def prefix(name):
    return f"kv-basic/{name}/".encode()


def key(prefix_bytes, index):
    return prefix_bytes + b"%08d" % index


def value(length):
    return bytes(ord("a") + i % 26 for i in range(length))


def settings(name, params):
    keys, length = param_int(params, "keys"), param_int(params, "value-bytes")
    if not 1 <= keys <= MAX_KEYS:
        raise Err(f"param `keys` = `{keys}` is out of range for workload `{name}` (give 1 to {MAX_KEYS})")
    if length > MAX_VALUE_BYTES:
        raise Err(f"param `value-bytes` = `{length}` is out of range (give 0 to {MAX_VALUE_BYTES})")
    return keys, length


def clear_fixture(name):
    begin, end = prefix(name), f"kv-basic/{name}0".encode()
    transact(lambda tr: tr.clear_range(begin, end))


def write_fixture(name, keys, data):
    p = prefix(name)
    per = max(1, FIXTURE_TRANSACTION_BYTES // (len(p) + 8 + len(data)))
    for start in range(0, keys, per):
        stop = min(keys, start + per)

        def body(tr, start=start, stop=stop):
            for index in range(start, stop):
                tr.set(key(p, index), data)

        transact(body)
    env.count("fixture-rows", keys)


def check(k, found, length):
    if found is None:
        raise Err(f"key `{k.decode()}` is missing (the fixture was not written or was cleared; run setup again)")
    if len(found) != length:
        raise Err(
            f"key `{k.decode()}` holds {len(found)} bytes, expected {length} (another run with other params wrote it; run setup again)"
        )


def setup_grv(_params):
    return lambda _iteration: transact(lambda tr: tr.get_read_version(), commit=False)[1]


def setup_get100(params):
    keys, length = settings("get100", params)
    clear_fixture("get100")
    write_fixture("get100", keys, value(length))
    p = prefix("get100")

    def run(_iteration):
        k = key(p, random_u64() % keys)
        found, retries = transact(lambda tr: tr.get(k))
        check(k, found, length)
        return retries

    return run


def setup_set100(params):
    keys, length = settings("set100", params)
    clear_fixture("set100")
    p, data = prefix("set100"), value(length)
    return lambda _iteration: transact(lambda tr: tr.set(key(p, random_u64() % keys), data))[1]


def setup_ryw(params):
    keys, length = settings("ryw", params)
    p, data = prefix("ryw"), value(length)

    def run(_iteration):
        k = key(p, random_u64() % keys)

        def body(tr):
            tr.set(k, data)
            found = tr.get(k)
            tr.cancel()
            return found

        found, retries = transact(body, commit=False)
        check(k, found, length)
        return retries

    return run


def setup_throws(_params):
    def run(_iteration):
        raise ValueError("kv-basic-py/throws: run raises on purpose")

    return run


def setup_calls(_params):
    p = prefix("calls")
    clear_fixture("calls")
    transact(lambda tr: [tr.set(key(p, i), value(4)) for i in range(3)])
    counter = b"kv-basic/calls/counter"

    def count(v):
        return 0 if v is None else int.from_bytes(v, "little", signed=True)

    def body(tr):
        values = join_all([tr.start_get(key(p, i)) for i in range(3)])
        watch = tr.watch(counter)
        tr.add(counter, 1)  # fires the watch before commit: its own write
        first = tr.get_key(first_greater_or_equal(p))
        return values, first, tr.get_versionstamp(), watch

    def run(_iteration):
        before = transact(lambda tr: tr.get(counter))[0]
        (values, first, stamp, watch), retries = transact(body)
        if any(v is None or len(v) != 4 for v in values):
            raise Err(f"joined reads answered {values!r}, expected three 4-byte values")
        if first != key(p, 0):
            raise Err(f"first_greater_or_equal(prefix) resolved to {first!r}")
        if len(stamp.wait()) != 10:
            raise Err("a versionstamp is not 10 bytes")
        after = transact(lambda tr: tr.get(counter))[0]
        if count(after) != count(before) + 1:
            raise Err(f"the atomic add went from {count(before)} to {count(after)}")
        with watch:
            if not watch.wait_for(1000):
                raise Err("a watch did not fire on its own atomic add")
        return retries

    return run


def setup_echo(params):
    # EchoRequest { payload = 1 }: tag 0x0a, the length, the bytes.
    request = b"\x0a\x10" + value(16)
    method = params["method"]

    def run(_iteration):
        response = unary(method, request)
        if len(response) != len(request):
            raise Err(f"the echo answered {len(response)} bytes, expected {len(request)}")
        return 0

    return run


# SimpleRequest { response_size: 100 } and StreamingOutputCallRequest {
# response_parameters: [{ size: 100 }] } of grpc.testing.TestService.
UNARY_CALL = b"\x10\x64"
DUPLEX_CALL = b"\x12\x02\x08\x64"


def setup_metadata(params):
    """A unary call and a stream to a grpc.testing.TestService that echoes
    metadata (peers/go-testservice's conventions), every option checked."""
    deadline_ms, delay_ms = param_int(params, "deadline_ms"), param_int(params, "delay_ms")
    metadata = {"x-grpc-test-echo-initial": "hi", "x-grpc-test-echo-trailing-bin": b"\x00\xff"}
    if delay_ms:
        metadata["x-delay-ms"] = str(delay_ms)

    def expect(what, got, want):
        if got != want:
            raise Err(f"{what} is {got!r}, expected {want!r}")

    def run(_iteration):
        reply = call("/grpc.testing.TestService/UnaryCall", UNARY_CALL, metadata=metadata,
                     deadline_ms=deadline_ms, gzip=True)
        expect("the reply's size", len(reply.message), 104)
        expect("header x-grpc-test-echo-initial", reply.get("x-grpc-test-echo-initial"), b"hi")
        expect("trailer x-grpc-test-echo-trailing-bin", reply.get("x-grpc-test-echo-trailing-bin"), b"\x00\xff")
        if reply.get("x-deadline-ms") is None:
            raise Err("the server saw no deadline")
        with open_stream("/grpc.testing.TestService/FullDuplexCall", metadata=metadata,
                         deadline_ms=deadline_ms) as stream:
            expect("the stream's header", dict(stream.headers()).get("x-grpc-test-echo-initial"), b"hi")
            stream.send(DUPLEX_CALL)
            expect("the stream's answer size", len(stream.recv()), 104)
            stream.close_send()
            expect("the stream's end", stream.recv(), None)
            expect("the stream's trailer", dict(stream.trailers()).get("x-grpc-test-echo-trailing-bin"), b"\x00\xff")
        return 0

    return run


class Holds:
    """One transaction held from setup to teardown, which closes it."""

    def __init__(self, params):
        self.tr, self.fail = Transaction(), params["fail"] == "yes"

    def run(self, _iteration):
        self.tr.get_read_version()
        return 0

    def teardown(self):
        self.tr.close()
        if self.fail:
            raise Err("kv-basic-py/holds: the final check fails on purpose")


Workload = workloads(
    {
        "grv": {
            "description": "read version only: one round trip to the GRV proxy, no commit",
            "uses": ["kv"],
            "setup": setup_grv,
        },
        "get100": {
            "description": "one point read of a 100 B value in a transaction that commits (read-only, so the commit is local)",
            "params": sized("100"),
            "uses": ["kv"],
            "setup": setup_get100,
        },
        "set100": {
            "description": "one 100 B write and commit",
            "params": sized("100"),
            "uses": ["kv"],
            "setup": setup_set100,
        },
        "ryw": {
            "description": "write then read the same 100 B key and cancel: read-your-writes, no commit, no server round trip",
            "params": sized("100"),
            "uses": ["kv"],
            "setup": setup_ryw,
        },
        "throws": {
            "description": TEST_ONLY + "raises a ValueError from run",
            "uses": ["kv"],
            "setup": setup_throws,
        },
        "calls": {
            "description": TEST_ONLY
            + "one transaction through WIT 0.3.0's calls: futures joined, an atomic add, a key selector, a versionstamp and a watch, each checked",
            "uses": ["kv"],
            "setup": setup_calls,
        },
        "holds": {
            "description": TEST_ONLY + "holds one transaction from setup to teardown, which closes it (param `fail` = `yes`: the teardown's final check fails)",
            "params": [("fail", "no", "`yes` to fail the teardown")],
            "uses": ["kv"],
            "setup": Holds,
        },
        "echo": {
            "description": TEST_ONLY + "one unary call of ingest.v1.Echo with a 16-byte payload (param `method` names another to see its error)",
            "params": [("method", "/ingest.v1.Echo/Echo", "the unary method to call")],
            "uses": ["grpc"],
            "setup": setup_echo,
        },
        "metadata": {
            "description": TEST_ONLY + "a unary call and a stream of grpc.testing.TestService with echoed metadata, a deadline and gzip, each checked",
            "params": [
                ("deadline_ms", "5000", "each call's deadline"),
                ("delay_ms", "0", "asks the server to wait this long first (x-delay-ms)"),
            ],
            "uses": ["grpc"],
            "setup": setup_metadata,
        },
    }
)
