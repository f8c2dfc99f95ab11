"""A blocklab workload plugin in Python, on WIT 0.5.0. Build it with
`blocklab plugin build .`, run it with
`blocklab run --plugin target/NAME.wasm --workload get`, or its gRPC
workload against your server with
`blocklab run --plugin target/NAME.wasm --workload unary --endpoint http://HOST:PORT`.

`blocklab` is blocklab's Python SDK (plugins/python/sdk/blocklab.py), put
on the plugin's path by the build. Randomness comes from `random_u64()`
(the run's seeded generator); an exception raised by setup or run reaches
the host with its type, message and traceback.
"""

from blocklab import Err, env, param_int, random_u64, transact, unary, workloads


def key(i):
    # 8 digits keep key order equal to row order.
    return b"example/get/%08d" % i


def setup_get(params):
    keys, value_bytes = param_int(params, "keys"), param_int(params, "value-bytes")
    if keys == 0:
        raise Err("param `keys` must be at least 1")
    value = b"x" * value_bytes
    # The fixture, in transactions well under FoundationDB's 10 MB.
    # transact() retries, and keeps the transaction for the next call.
    for start in range(0, keys, 1000):
        transact(lambda tr, start=start: [tr.set(key(i), value) for i in range(start, min(keys, start + 1000))])
    env.count("fixture-rows", keys)

    # The run function: one transaction, returns its retries.
    def run(_iteration):
        k = key(random_u64() % keys)
        found, retries = transact(lambda tr: tr.get(k))
        if found is None:
            raise Err(f"key `{k.decode()}` is missing")
        if len(found) != value_bytes:
            raise Err(f"key holds {len(found)} bytes, expected {value_bytes}")
        return retries

    return run


def setup_unary(params):
    text = params["request"]
    try:
        request = bytes.fromhex(text)
    except ValueError:
        raise Err(f"param `request` = `{text}` is not hex bytes (give pairs of hex digits, e.g. `0a0568656c6c6f`)")
    method = params["method"]

    # A failed call raises a GrpcError that reads, e.g.,
    # `UNIMPLEMENTED (12) on /package.Service/Method: the server's message`.
    def run(_iteration):
        unary(method, request)
        return 0

    return run


Workload = workloads(
    {
        "get": {
            "description": "one point read of a fixture row, committed",
            "params": [("keys", "1000", "fixture rows"), ("value-bytes", "100", "bytes per value")],
            "uses": ["kv"],
            "setup": setup_get,
        },
        "unary": {
            "description": "one unary call of your service: `method` with `request` (hex of the encoded protobuf message)",
            "params": [
                # blocklab's own test server (`blocklab target grpc-ingest`)
                # answers this one; name your service's method and message.
                ("method", "/ingest.v1.Echo/Echo", "the full method name, /package.Service/Method"),
                ("request", "0a0568656c6c6f", 'the encoded request, as hex (here EchoRequest { payload: "hello" })'),
            ],
            "uses": ["grpc"],
            "setup": setup_unary,
        },
    }
)
