"""blocklab's Python SDK: the glue between a workload module (`app.py`) and
the WIT world `workload-plugin` of wit/v0.5.0 (0.5.0's grpc client, 0.3.0's
kv and env, and 0.4.0's workload with its teardown), for plugins built with
componentize-py (`blocklab plugin build`, or the Makefile's plugins-py,
which put this module on the plugin's Python path).

- `workloads(table)` makes the `Workload` export from a table of workloads:
  params checked with the host's words, and an exception raised by setup or
  run returned to the host as `Type: message (at file:line in function)` and
  the traceback, instead of a bare `unreachable` trap (componentize-py
  traps on any exception but `Err`, and --stub-wasi leaves no stderr).
- `Transaction` wraps the kv transaction: range reads come back as
  `(key, value)` rows, futures answer plain values, and `transact()` is
  FoundationDB's retry loop, which keeps up to four transactions (reset, not
  dropped) for the next call.
- `unary`, `call` and `open_stream` take request metadata, a deadline and
  gzip as keywords, and raise a `GrpcError` that names the status and the
  method, in the host's words; `call` returns the response's headers and
  trailers too.
- Randomness and time come from `env.random` and `env.now_ns`, the run's
  seeded generator and clock (`random_u64()`).
"""

import traceback

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import workload as _workload
from wit_world.imports import env
from wit_world.imports import grpc as _grpc
from wit_world.imports import kv as _kv

MutationType = _kv.MutationType
StreamingMode = _kv.StreamingMode
Priority = _kv.Priority

# ---- determinism -------------------------------------------------------


def random_u64():
    """A uniform 64-bit integer from the run's seeded generator."""
    return int.from_bytes(env.random(8), "little")


# ---- errors --------------------------------------------------------------


def in_own_words(error):
    """An exception as the WIT error string: `Type: message (at file:line in
    function)` on the first line (the line results group errors by), then
    the traceback."""
    frames = traceback.StackSummary.extract(
        traceback.walk_tb(error.__traceback__), lookup_lines=False
    )
    where = [f"{f.filename}:{f.lineno} in {f.name}" for f in frames]
    head = f"{type(error).__name__}: {error}"
    if not where:
        return head
    return f"{head} (at {where[-1]})\n" + "\n".join(reversed(where))


def describe_kv(error):
    """A kv error in the host's words, so a failed run reads the same."""
    if isinstance(error, _kv.Error_Other):
        return f"{error.value.message} ({error.value.code})"
    return type(error).__name__.removeprefix("Error_")


def _is_kv_error(value):
    return type(value).__name__.startswith("Error_")


def _release(resource):
    resource.__exit__(None, None, None)


# ---- kv ------------------------------------------------------------------


def _unpack(packed):
    """Rows of a `packed-rows` buffer: per row, u32 LE key length, key, u32
    LE value length, value."""
    rows, at = [], 0
    while at < len(packed):
        n = int.from_bytes(packed[at : at + 4], "little")
        k = packed[at + 4 : at + 4 + n]
        at += 4 + n
        n = int.from_bytes(packed[at : at + 4], "little")
        rows.append((k, packed[at + 4 : at + 4 + n]))
        at += 4 + n
    return rows


def _answer(a):
    if isinstance(a, _kv.Answer_Range):
        return _unpack(a.value.rows), a.value.more
    return a.value


class _Held:
    """A host resource the guest must release: `close()`, or a `with`
    block (componentize-py drops a resource on `__exit__`)."""

    def close(self):
        _release(self.raw)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Future:
    """A kv call issued now and waited for later: issue several, then wait;
    their round trips overlap. `wait()` returns the answer and releases the
    host's resource."""

    def __init__(self, raw):
        self.raw = raw
        self.done = None

    def is_ready(self):
        return self.done is not None or self.raw.is_ready()

    def wait(self):
        if self.done is None:
            try:
                self.done = (True, _answer(self.raw.wait()))
            except Err as e:
                self.done = (False, e)
            _release(self.raw)
        ok, value = self.done
        if not ok:
            raise value
        return value


def join_all(futures):
    """Waits for every future (one crossing); their answers in order."""
    _kv.wait_all([f.raw for f in futures if f.done is None])
    return [f.wait() for f in futures]


def wait_any(futures):
    """Waits until one future is ready; its index."""
    for i, f in enumerate(futures):
        if f.done is not None:
            return i
    return _kv.wait_any([f.raw for f in futures])


class Watch(_Held):
    """A watch: fires once the key's value differs from the one its
    transaction saw (only its own writes fire it before commit, any changing
    commit after). Close it (or use `with`) when done."""

    def __init__(self, raw):
        self.raw = raw

    def is_ready(self):
        return self.raw.is_ready()

    def wait(self):
        """Blocks until it fires; raises its error if it failed."""
        self.raw.wait()

    def wait_for(self, timeout_ms):
        """Blocks at most `timeout_ms`: True if it fired."""
        return self.raw.wait_for(timeout_ms)


def first_greater_or_equal(key):
    return _kv.KeySelector(key, False, 1)


def first_greater_than(key):
    return _kv.KeySelector(key, True, 1)


def last_less_or_equal(key):
    return _kv.KeySelector(key, True, 0)


def last_less_than(key):
    return _kv.KeySelector(key, False, 0)


def plus(selector, n):
    return _kv.KeySelector(selector.key, selector.or_equal, selector.offset + n)


class TransactionOption:
    """Transaction options, e.g. `tr.set_option(TransactionOption.timeout(100))`."""

    timeout = _kv.TransactionOption_Timeout
    retry_limit = _kv.TransactionOption_RetryLimit
    max_retry_delay = _kv.TransactionOption_MaxRetryDelay
    size_limit = _kv.TransactionOption_SizeLimit
    priority = _kv.TransactionOption_Priority  # with a Priority
    read_your_writes_disable = _kv.TransactionOption_ReadYourWritesDisable()
    snapshot_ryw_enable = _kv.TransactionOption_SnapshotRywEnable()
    snapshot_ryw_disable = _kv.TransactionOption_SnapshotRywDisable()
    causal_read_risky = _kv.TransactionOption_CausalReadRisky()
    lock_aware = _kv.TransactionOption_LockAware()


class Transaction(_Held):
    """One kv transaction, as wit/v0.3.0/kv.wit specifies each call. Failed
    reads raise `Err` with the WIT error (transact() retries it). Close it
    (or use `with`), or use transact(), which keeps it."""

    def __init__(self, raw=None):
        self.raw = _kv.Transaction() if raw is None else raw

    def get_read_version(self):
        return self.raw.get_read_version()

    def get(self, key, snapshot=False):
        return self.raw.get(key, snapshot)

    def get_range(self, begin, end, limit=0, reverse=False, snapshot=False):
        """Rows in [begin, end) as `(key, value)` pairs; `limit` 0 means all."""
        return _unpack(self.raw.get_range(begin, end, limit, reverse, snapshot))

    def set(self, key, value):
        self.raw.set(key, value)

    def clear(self, key):
        self.raw.clear(key)

    def clear_range(self, begin, end):
        self.raw.clear_range(begin, end)

    def commit(self):
        return self.raw.commit()

    def on_error(self, error):
        self.raw.on_error(error)

    def cancel(self):
        self.raw.cancel()

    def reset(self):
        self.raw.reset()

    # Futures: each start_* call is issued now; wait() (or join_all) answers it.

    def start_get_read_version(self):
        return Future(self.raw.start_get_read_version())

    def start_get(self, key, snapshot=False):
        return Future(self.raw.start_get(key, snapshot))

    def start_get_key(self, selector, snapshot=False):
        return Future(self.raw.start_get_key(selector, snapshot))

    def get_key(self, selector, snapshot=False):
        return self.start_get_key(selector, snapshot).wait()

    def start_get_range(
        self,
        begin,
        end,
        limit=0,
        target_bytes=0,
        mode=StreamingMode.ITERATOR,
        iteration=1,
        reverse=False,
        snapshot=False,
    ):
        """One batch between two selectors: a future of `(rows, more)`."""
        options = _kv.RangeOptions(limit, target_bytes, mode, iteration, reverse, snapshot)
        return Future(self.raw.start_get_range(begin, end, options))

    def start_commit(self):
        return Future(self.raw.start_commit())

    def start_get_estimated_range_size_bytes(self, begin, end):
        return Future(self.raw.start_get_estimated_range_size_bytes(begin, end))

    def atomic_op(self, op, key, operand):
        self.raw.atomic_op(op, key, operand)

    def add(self, key, delta):
        """Adds `delta` to a little-endian 64-bit counter."""
        self.raw.atomic_op(MutationType.ADD, key, delta.to_bytes(8, "little", signed=True))

    def set_versionstamped_key(self, key, offset, value):
        self.raw.set_versionstamped_key(key, offset, value)

    def set_versionstamped_value(self, key, value, offset):
        self.raw.set_versionstamped_value(key, value, offset)

    def get_versionstamp(self):
        """The commit's versionstamp: ask before commit, wait after."""
        return Future(self.raw.get_versionstamp())

    def add_read_conflict_range(self, begin, end):
        self.raw.add_conflict_range(_kv.ConflictKind.READ, begin, end)

    def add_read_conflict_key(self, key):
        self.raw.add_conflict_range(_kv.ConflictKind.READ, key, key + b"\x00")

    def add_write_conflict_range(self, begin, end):
        self.raw.add_conflict_range(_kv.ConflictKind.WRITE, begin, end)

    def add_write_conflict_key(self, key):
        self.raw.add_conflict_range(_kv.ConflictKind.WRITE, key, key + b"\x00")

    def set_read_version(self, version):
        self.raw.set_read_version(version)

    def get_committed_version(self):
        return self.raw.get_committed_version()

    def get_approximate_size(self):
        return self.raw.get_approximate_size()

    def set_option(self, option):
        self.raw.set_option(option)

    def watch(self, key):
        return Watch(self.raw.watch(key))


_kept = []
_KEEP = 4


def transact(body, commit=True):
    """FoundationDB's retry loop: runs `body(tr)` and commits (unless
    `commit=False`), retrying on retryable errors. Returns `(value,
    retries)`. The transaction is reset and kept for the next call."""
    tr = _kept.pop() if _kept else Transaction()
    try:
        retries = 0
        while True:
            try:
                value = body(tr)
                if commit:
                    tr.commit()
                return value, retries
            except Err as e:
                if not _is_kv_error(e.value):
                    raise
                try:
                    tr.on_error(e.value)
                except Err as fatal:
                    raise Err(f"kv error {describe_kv(fatal.value)}")
                retries += 1
    finally:
        if len(_kept) < _KEEP:
            tr.reset()
            _kept.append(tr)
        else:
            tr.close()


# ---- grpc ----------------------------------------------------------------

_STATUS_NAMES = [
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED",
]  # fmt: skip


class GrpcError(Exception):
    """A gRPC status other than OK, with the call's method; reads
    `UNIMPLEMENTED (12) on /pkg.Service/Method: the server's message`.
    `metadata` holds the (key, bytes) pairs that came with it."""

    def __init__(self, status, method):
        name = _STATUS_NAMES[status.code] if status.code < len(_STATUS_NAMES) else "UNKNOWN_CODE"
        said = f": {status.message}" if status.message else " (the server sent no message)"
        super().__init__(f"{name} ({status.code}) on {method}{said}")
        self.code = status.code
        self.method = method
        self.server_message = status.message
        self.metadata = _pairs(status.metadata)


def _grpc_call(method, call):
    try:
        return call()
    except Err as e:
        if isinstance(e.value, _grpc.Status):
            raise GrpcError(e.value, method) from None
        raise


def _pairs(entries):
    return [(e.key, bytes(e.value)) for e in entries]


def _options(metadata, deadline_ms, gzip):
    """The WIT call options: `metadata` a dict or (key, value) pairs, values
    str (ASCII) or bytes (under keys ending in `-bin`); `deadline_ms` None
    or milliseconds; `gzip` compresses the requests."""
    items = metadata.items() if isinstance(metadata, dict) else (metadata or [])
    entries = [_grpc.Entry(key=k, value=v.encode() if isinstance(v, str) else bytes(v)) for k, v in items]
    compression = _grpc.Compression.GZIP if gzip else _grpc.Compression.IDENTITY
    return _grpc.CallOptions(metadata=entries, deadline_ms=deadline_ms, compression=compression)


class Reply:
    """A unary call's answer: `message` (bytes), and the response's
    `headers` and `trailers` as (key, bytes) pairs."""

    def __init__(self, raw):
        self.message = bytes(raw.message)
        self.headers = _pairs(raw.headers)
        self.trailers = _pairs(raw.trailers)

    def get(self, key):
        """The first value under `key` in the headers, then the trailers."""
        return next((v for k, v in self.headers + self.trailers if k == key), None)


def call(method, request, metadata=None, deadline_ms=None, gzip=False):
    """Calls unary `method` with an encoded request and call options; a
    `Reply`."""
    options = _options(metadata, deadline_ms, gzip)
    return Reply(_grpc_call(method, lambda: _grpc.unary(method, request, options)))


def unary(method, request, metadata=None, deadline_ms=None, gzip=False):
    """Calls unary `method` (e.g. '/ingest.v1.Echo/Echo') with an encoded
    request; the encoded response."""
    return call(method, request, metadata, deadline_ms, gzip).message


class Stream(_Held):
    """One bidirectional stream, bound to one connection when opened. Close
    it (or use `with`) when done."""

    def __init__(self, raw, method):
        self.raw, self.method = raw, method

    def send(self, message):
        _grpc_call(self.method, lambda: self.raw.send(message))

    def recv(self):
        """The next message, or None once the server ended the stream with OK."""
        return _grpc_call(self.method, self.raw.recv)

    def close_send(self):
        self.raw.close_send()

    def headers(self):
        """The response headers as (key, bytes) pairs; waits for them."""
        return _pairs(_grpc_call(self.method, self.raw.headers))

    def trailers(self):
        """The trailers once `recv` returned None, else None."""
        t = self.raw.trailers()
        return None if t is None else _pairs(t)


def open_stream(method, metadata=None, deadline_ms=None, gzip=False):
    """Opens a bidirectional stream on `method`; the options hold for the
    whole stream."""
    options = _options(metadata, deadline_ms, gzip)
    return Stream(_grpc_call(method, lambda: _grpc.open_stream(method, options)), method)


# ---- the workload export -------------------------------------------------


def param_int(params, name):
    """Param `name` as a whole number, with the host's wording when it is not."""
    text = str(params[name]).strip()
    if not text.isdigit():
        raise Err(f"param `{name}` = `{params[name]}` is not a whole number (give digits only, e.g. `1000`)")
    return int(text)


def param_float(params, name):
    """Param `name` as a finite decimal, with the host's wording when it is not."""
    text = str(params[name]).strip()
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if value != value or value in (float("inf"), float("-inf")) or "x" in text.lower():
        raise Err(f"param `{name}` = `{params[name]}` is not a finite number (give a decimal, e.g. `0.99`)")
    return value


def _guarded(call):
    try:
        return call()
    except Err:
        raise
    except Exception as error:
        raise Err(in_own_words(error)) from None


def workloads(table):
    """The `Workload` export for a table of workloads; in app.py:

        Workload = workloads({
            "get": {
                "description": "...",
                "params": [("keys", "1000", "fixture rows")],
                "uses": ["kv"],
                "setup": setup_get,  # params -> run(iteration) -> retries
            },
        })

    `setup` gets every declared param as text, defaults filled in and
    unknown names refused (`param_int`, `param_float` parse one), and
    returns the run function, or an object with `run` and `teardown`:
    teardown is called once after the measured window, untimed, to release
    what the workload holds (close a stream) and check its final state
    (raise to fail the run).
    """
    current = {}

    class Workload(exports.Workload):
        def list(self):
            return [
                _workload.Info(
                    name,
                    w.get("description", ""),
                    [_workload.ParamSpec(n, d, h) for n, d, h in w.get("params", [])],
                    list(w.get("uses", [])),
                )
                for name, w in table.items()
            ]

        def setup(self, name, params):
            current.clear()
            w = table.get(name)
            if w is None:
                raise Err(f"unknown workload `{name}` (known: {', '.join(table)})")
            values = {n: d for n, d, _ in w.get("params", [])}
            for given, text in params:
                if given not in values:
                    known = ", ".join(values) if values else "it takes none"
                    raise Err(f"workload `{name}` has no param `{given}` (known: {known})")
                values[given] = text
            made = _guarded(lambda: w["setup"](values))
            current["run"] = made if callable(made) else made.run
            current["teardown"] = getattr(made, "teardown", None)

        def run(self, iteration):
            run = current.get("run")
            if run is None:
                raise Err("`run` was called before a successful `setup` (set a workload up first)")
            return _guarded(lambda: run(iteration)) or 0

        def teardown(self):
            if "run" not in current:
                raise Err("`teardown` was called without a set-up workload (the host calls it once per setup)")
            teardown = current.get("teardown")
            current.clear()
            if teardown is not None:
                _guarded(teardown)

    return Workload
