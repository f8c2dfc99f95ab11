"""grpc.testing.TestService's UnaryCall, EmptyCall and FullDuplexCall on a
stock grpcio server, with the metadata conventions of peers/go-testservice
(see there), for the tests of plugins that bring their own gRPC service
(issue 33; host/tests/all/plugins.rs, `own_service`).

Usage: python3 host/tests/peers/grpcio_testservice.py --listen 127.0.0.1:PORT;
prints `listening on ADDR` once it accepts calls and serves until killed.

Messages are read and written by hand (grpcio ships no grpc.testing
modules), with grpcio_ingest.py's helpers: SimpleRequest.response_size is field 2, StreamingOutputCallRequest
.response_parameters field 2 with `size` field 1; each response is a
Payload (field 1) whose body (field 2) is that many zero bytes.
"""

import argparse
import sys
import threading
import time
from concurrent import futures

import grpc

# The protobuf helpers of the ingest fixture beside this file.
from grpcio_ingest import encode_varint as varint
from grpcio_ingest import fields


def payload(size):
    body = bytes([0x12]) + varint(size) + bytes(size)
    return bytes([0x0A]) + varint(len(body)) + body


def answer(context):
    """Headers and trailers from the request's metadata, then `x-delay-ms`;
    returns False when the call was ended with an error."""
    md = {}
    for k, v in context.invocation_metadata():
        md.setdefault(k, v)
    auth = md.get("authorization")
    if auth is not None and auth != "Bearer blocklab":
        context.abort(grpc.StatusCode.UNAUTHENTICATED, f"authorization {auth!r} is not `Bearer blocklab`")
    headers = []
    if "x-grpc-test-echo-initial" in md:
        headers.append(("x-grpc-test-echo-initial", md["x-grpc-test-echo-initial"]))
    left = context.time_remaining()
    if left is not None and left < 1e9:
        headers.append(("x-deadline-ms", str(int(left * 1000))))
    context.send_initial_metadata(headers)
    if "x-grpc-test-echo-trailing-bin" in md:
        context.set_trailing_metadata([("x-grpc-test-echo-trailing-bin", md["x-grpc-test-echo-trailing-bin"])])
    if "x-delay-ms" in md:
        try:
            ms = int(md["x-delay-ms"])
        except ValueError:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"x-delay-ms {md['x-delay-ms']!r} is not a number")
        done = threading.Event()
        context.add_callback(done.set)
        if done.wait(ms / 1000):
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "the call ended before its delay")


def checked_size(size, context):
    if size > 1 << 20:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"size {size} is not in 0..1048576")
    return size


def unary_call(request, context):
    answer(context)
    size = 0
    for number, _, value in fields(request):
        if number == 2:
            size = value
    return payload(checked_size(size, context))


def empty_call(request, context):
    answer(context)
    return b""


def full_duplex_call(requests, context):
    answer(context)
    for request in requests:
        for number, _, value in fields(request):
            if number == 2:
                size = next((v for n, _, v in fields(value) if n == 1), 0)
                yield payload(checked_size(size, context))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", default="127.0.0.1:0", help="address to listen on (loopback by default)")
    args = parser.parse_args()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("grpc.testing.TestService", {
        "UnaryCall": grpc.unary_unary_rpc_method_handler(unary_call),
        "EmptyCall": grpc.unary_unary_rpc_method_handler(empty_call),
        "FullDuplexCall": grpc.stream_stream_rpc_method_handler(full_duplex_call),
    })])
    port = server.add_insecure_port(args.listen)
    if port == 0:
        print(f"grpcio_testservice: cannot listen on {args.listen}", file=sys.stderr)
        sys.exit(1)
    server.start()
    host = args.listen.rsplit(":", 1)[0]
    print(f"listening on {host}:{port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
