"""kv-basic-py: four of kv-basic's workloads (grv, get100, set100, ryw) as a
Python workload plugin, built with componentize-py, and `throws` (an
uncaught exception, for blocklab's tests of plugin errors).

The key layout, values, params and random draws are kv-basic's
(plugins/workloads/kv-basic/src/catalog.rs), so the same seed touches the
same keys in both plugins and a campaign can compare them arm against arm.
"""

import traceback

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import workload
from wit_world.imports import env, kv

KEYS_HELP = "fixture keys; each transaction picks one with env random_u64 % keys"
VALUE_HELP = "bytes per value"
# Most fixture bytes (keys plus values) in one setup transaction, as in
# catalog.rs: well inside FoundationDB's 10 MB limit.
FIXTURE_TRANSACTION_BYTES = 1_000_000
MAX_KEYS = 500_000  # as kv-basic's catalog.rs: what setup writes within the default deadline
MAX_VALUE_BYTES = 100_000


def sized(value_bytes):
    return [
        workload.ParamSpec("keys", "1000", KEYS_HELP),
        workload.ParamSpec("value-bytes", value_bytes, VALUE_HELP),
    ]


# name -> (kind, description, params)
WORKLOADS = {
    "grv": ("grv", "read version only: one round trip to the GRV proxy, no commit", []),
    "get100": (
        "get",
        "one point read of a 100 B value in a transaction that commits (read-only, so the commit is local)",
        sized("100"),
    ),
    "set100": ("set", "one 100 B write and commit", sized("100")),
    "ryw": (
        "ryw",
        "write then read the same 100 B key and cancel: read-your-writes, no commit, no server round trip",
        sized("100"),
    ),
    "throws": (
        "throws",
        "test-only, for blocklab's tests of plugin errors: raises a ValueError from run",
        [],
    ),
}


def prefix(name):
    return f"kv-basic/{name}/".encode()


def key(prefix_bytes, index):
    return prefix_bytes + b"%08d" % index


def value(length):
    return bytes(ord("a") + i % 26 for i in range(length))


def random_u64():
    return int.from_bytes(env.random(8), "little")


def describe(error):
    """kv errors in the host's words, so a failed run reads the same."""
    if isinstance(error, kv.Error_Other):
        return f"{error.value.message} ({error.value.code})"
    return type(error).__name__.removeprefix("Error_")


def transact(body, commit=True):
    """FoundationDB's retry loop; returns the body's value and the retries."""
    with kv.Transaction() as tr:
        retries = 0
        while True:
            try:
                result = body(tr)
                if commit:
                    tr.commit()
                return result, retries
            except Err as e:
                if isinstance(e.value, str):
                    raise
                try:
                    tr.on_error(e.value)
                except Err as fatal:
                    raise Err(describe(fatal.value))
                retries += 1


def resolve(name, params):
    _, _, specs = WORKLOADS[name]
    values = {p.name: p.default for p in specs}
    for given, text in params:
        if given not in values:
            known = ", ".join(values) if values else "it takes none"
            raise Err(f"workload `{name}` has no param `{given}` (known: {known})")
        values[given] = text
    settings = {}
    for p, text in values.items():
        try:
            settings[p] = int(text.strip())
        except ValueError:
            raise Err(f"param `{p}` = `{text}` is not a whole number (give digits only, e.g. `1000`)")
    if specs:
        if not 1 <= settings["keys"] <= MAX_KEYS:
            raise Err(
                f"param `keys` = `{settings['keys']}` is out of range for workload `{name}` (give 1 to {MAX_KEYS})"
            )
        if settings["value-bytes"] > MAX_VALUE_BYTES:
            raise Err(
                f"param `value-bytes` = `{settings['value-bytes']}` is out of range (give 0 to {MAX_VALUE_BYTES})"
            )
    return settings


class Current:
    """The workload of this run: components are single-threaded."""

    run = None


def write_fixture(name, kind, settings):
    if kind in ("grv", "ryw", "throws"):
        return
    start_key, end_key = prefix(name), f"kv-basic/{name}0".encode()
    transact(lambda tr: tr.clear_range(start_key, end_key))
    if kind != "get":
        return
    keys, data = settings["keys"], value(settings["value-bytes"])
    per = max(1, FIXTURE_TRANSACTION_BYTES // (len(start_key) + 8 + len(data)))
    for start in range(0, keys, per):
        stop = min(keys, start + per)

        def body(tr, start=start, stop=stop):
            for index in range(start, stop):
                tr.set(key(start_key, index), data)

        transact(body)
    env.count("fixture-rows", keys)


def check(k, found, length):
    if found is None:
        raise Err(
            f"key `{k.decode()}` is missing (the fixture was not written or was cleared; run setup again)"
        )
    if len(found) != length:
        raise Err(
            f"key `{k.decode()}` holds {len(found)} bytes, expected {length} (another run with other params wrote it; run setup again)"
        )


def in_own_words(error):
    """An uncaught exception as the WIT error string: `Type: message (at
    file:line in function)`, then the traceback. componentize-py traps on an
    exception that is not `Err`, and --stub-wasi leaves no stderr to print
    it to, so without this the user sees only `unreachable`."""
    frames = traceback.StackSummary.extract(
        traceback.walk_tb(error.__traceback__), lookup_lines=False
    )
    where = [f"{f.filename}:{f.lineno} in {f.name}" for f in frames]
    head = f"{type(error).__name__}: {error}"
    if not where:
        return head
    return f"{head} (at {where[-1]})\n" + "\n".join(reversed(where))


def guarded(call):
    try:
        return call()
    except Err:
        raise
    except Exception as error:
        raise Err(in_own_words(error))


def make_run(name, kind, settings):
    if kind == "throws":

        def run():
            raise ValueError("kv-basic-py/throws: run raises on purpose")

        return run
    if kind == "grv":
        return lambda: transact(lambda tr: tr.get_read_version(), commit=False)[1]
    keys, length = settings["keys"], settings["value-bytes"]
    p, data = prefix(name), value(length)
    if kind == "get":

        def run():
            k = key(p, random_u64() % keys)
            found, retries = transact(lambda tr: tr.get(k, False))
            check(k, found, length)
            return retries

    elif kind == "set":

        def run():
            k = key(p, random_u64() % keys)
            return transact(lambda tr: tr.set(k, data))[1]

    else:

        def run():
            k = key(p, random_u64() % keys)

            def body(tr):
                tr.set(k, data)
                found = tr.get(k, False)
                tr.cancel()
                return found

            found, retries = transact(body, commit=False)
            check(k, found, length)
            return retries

    return run


class Workload(exports.Workload):
    def list(self):
        return [
            workload.Info(name, description, params, ["kv"])
            for name, (_, description, params) in WORKLOADS.items()
        ]

    def setup(self, name, params):
        guarded(lambda: self.set_up(name, params))

    def set_up(self, name, params):
        Current.run = None
        if name not in WORKLOADS:
            raise Err(f"unknown workload `{name}` (known: {', '.join(WORKLOADS)})")
        kind = WORKLOADS[name][0]
        settings = resolve(name, params)
        write_fixture(name, kind, settings)
        Current.run = make_run(name, kind, settings)

    def run(self, iteration):
        if Current.run is None:
            raise Err("`run` was called before a successful `setup` (set a workload up first)")
        return guarded(Current.run)
