"""A stock grpcio server speaking ingest.v1 (host/proto/ingest.proto), for
interop tests: `blocklab`'s client must work against a server nobody here
wrote. No generated code: a generic handler with identity (de)serializers,
and the few protobuf fields decoded and encoded by hand.

Like grpc-go and grpc-java servers, grpcio sends response headers with its
first message, and this server sends its first message (an ack) only after
reading `--ack-every` records: a client that waits for headers before it
sends deadlocks here.

An Echo of the payload `die` ends the process mid-call (a cut connection).
`--ack-ahead N` is a test knob: every ack claims N records more than were
received, which a client must refuse.

Usage: python3 grpcio_ingest.py [--ack-every N] [--ack-ahead N]
Prints `listening on 127.0.0.1:PORT` once serving; runs until killed.
"""

import argparse
import os
import sys
from concurrent import futures

import grpc


def varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def fields(data):
    """(field number, wire type, value) of each field of a message."""
    at = 0
    while at < len(data):
        key, at = varint(data, at)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, at = varint(data, at)
        elif wire_type == 2:
            length, at = varint(data, at)
            value, at = data[at : at + length], at + length
        else:
            raise ValueError(f"wire type {wire_type} is not used by ingest.v1")
        yield number, wire_type, value


def offsets(batch):
    """The offsets of a Batch's records, in order."""
    for number, wire_type, record in fields(batch):
        if number == 1 and wire_type == 2:
            offset = 0
            for n, t, value in fields(record):
                if n == 1 and t == 0:
                    offset = value
            yield offset


def encode_varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def ack(next_offset):
    """Ack { next_offset }: field 1, varint; left out when 0 (proto3)."""
    return b"\x08" + encode_varint(next_offset) if next_offset else b""


def make_stream(ack_every, ack_ahead):
    def stream(requests, context):
        expected = pending = 0
        for batch in requests:
            for offset in offsets(batch):
                if offset != expected:
                    context.abort(
                        grpc.StatusCode.INVALID_ARGUMENT,
                        f"out-of-order offset: expected {expected}, got {offset}",
                    )
                expected += 1
                pending += 1
            if pending >= ack_every:
                pending = 0
                yield ack(expected + ack_ahead)
        if pending:
            yield ack(expected + ack_ahead)

    return stream


# An EchoRequest whose payload is `die`: the process exits mid-call, so the
# client sees its connection cut with a call in flight.
DIE = b"\x0a\x03die"


def echo(request, context):
    if request == DIE:
        os._exit(3)
    # EchoRequest and EchoResponse are both `bytes payload = 1`.
    return request


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ack-every", type=int, default=64)
    parser.add_argument("--ack-ahead", type=int, default=0)
    args = parser.parse_args()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "ingest.v1.Ingest",
                {"Stream": grpc.stream_stream_rpc_method_handler(make_stream(args.ack_every, args.ack_ahead))},
            ),
            grpc.method_handlers_generic_handler(
                "ingest.v1.Echo",
                {"Echo": grpc.unary_unary_rpc_method_handler(echo)},
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"listening on 127.0.0.1:{port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    sys.exit(main())
