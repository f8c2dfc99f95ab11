// go-testservice: a stock grpc-go server of grpc.testing.TestService (the
// generated service in Debian's golang-google-grpc-dev,
// google.golang.org/grpc/test/grpc_testing), for the tests of plugins that
// bring their own gRPC service (issue 33; host/tests/all/plugins.rs, `own_service`; a grpcio twin is
// host/tests/peers/grpcio_testservice.py).
//
// Usage: go-testservice --listen 127.0.0.1:PORT; it prints `listening on
// ADDR` once it accepts calls and serves until killed.
//
// Beside the messages it follows grpc-interop's metadata conventions, so a
// client can see what reached the server and what came back:
//   - request metadata `x-grpc-test-echo-initial` is sent back as a
//     response header of the same name, `x-grpc-test-echo-trailing-bin` as
//     a trailer (interop's "custom_metadata" case);
//   - a call with a deadline answers header `x-deadline-ms`: the time left
//     to it when the call arrived (none without a deadline);
//   - request metadata `x-delay-ms: N` makes the call wait N ms before it
//     answers, or until its deadline, when it ends DEADLINE_EXCEEDED as
//     grpc-go ends a call whose context expired;
//   - request metadata `authorization` is required to be `Bearer blocklab`
//     when present (UNAUTHENTICATED otherwise), so a test sees it arrive.
// Compression: grpc-go's gzip codec is registered, so gzip requests are
// accepted and a gzip request is answered in gzip.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	testpb "google.golang.org/grpc/test/grpc_testing"
)

type server struct {
	testpb.UnimplementedTestServiceServer
}

// answer sends the call's response headers and sets its trailers from the
// request's metadata, then waits `x-delay-ms`; an error ends the call.
func answer(ctx context.Context, send func(metadata.MD) error, trail func(metadata.MD)) error {
	in, _ := metadata.FromIncomingContext(ctx)
	if auth := in.Get("authorization"); len(auth) > 0 && auth[0] != "Bearer blocklab" {
		return status.Errorf(codes.Unauthenticated, "authorization %q is not `Bearer blocklab`", auth[0])
	}
	headers := metadata.MD{}
	if v := in.Get("x-grpc-test-echo-initial"); len(v) > 0 {
		headers.Set("x-grpc-test-echo-initial", v...)
	}
	if deadline, ok := ctx.Deadline(); ok {
		headers.Set("x-deadline-ms", strconv.FormatInt(time.Until(deadline).Milliseconds(), 10))
	}
	if err := send(headers); err != nil {
		return err
	}
	if v := in.Get("x-grpc-test-echo-trailing-bin"); len(v) > 0 {
		trail(metadata.MD{"x-grpc-test-echo-trailing-bin": v})
	}
	if v := in.Get("x-delay-ms"); len(v) > 0 {
		ms, err := strconv.Atoi(v[0])
		if err != nil {
			return status.Errorf(codes.InvalidArgument, "x-delay-ms %q is not a number", v[0])
		}
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	return nil
}

func (server) EmptyCall(ctx context.Context, _ *testpb.Empty) (*testpb.Empty, error) {
	err := answer(ctx, func(md metadata.MD) error { return grpc.SendHeader(ctx, md) },
		func(md metadata.MD) { grpc.SetTrailer(ctx, md) })
	if err != nil {
		return nil, err
	}
	return &testpb.Empty{}, nil
}

// UnaryCall answers `response_size` zero bytes, as interop's server does.
func (server) UnaryCall(ctx context.Context, in *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	err := answer(ctx, func(md metadata.MD) error { return grpc.SendHeader(ctx, md) },
		func(md metadata.MD) { grpc.SetTrailer(ctx, md) })
	if err != nil {
		return nil, err
	}
	if in.ResponseSize < 0 || in.ResponseSize > 1<<20 {
		return nil, status.Errorf(codes.InvalidArgument, "response_size %d is not in 0..1048576", in.ResponseSize)
	}
	return &testpb.SimpleResponse{Payload: &testpb.Payload{Body: make([]byte, in.ResponseSize)}}, nil
}

// FullDuplexCall answers each request with one message per response
// parameter (`size` zero bytes), in order, until the client half-closes.
func (server) FullDuplexCall(stream testpb.TestService_FullDuplexCallServer) error {
	ctx := stream.Context()
	if err := answer(ctx, stream.SendHeader, stream.SetTrailer); err != nil {
		return err
	}
	for {
		in, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		for _, p := range in.ResponseParameters {
			if p.Size < 0 || p.Size > 1<<20 {
				return status.Errorf(codes.InvalidArgument, "size %d is not in 0..1048576", p.Size)
			}
			out := &testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: make([]byte, p.Size)}}
			if err := stream.Send(out); err != nil {
				return err
			}
		}
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (loopback by default)")
	flag.Parse()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-testservice: cannot listen on %s: %v\n", *listen, err)
		os.Exit(1)
	}
	s := grpc.NewServer()
	testpb.RegisterTestServiceServer(s, server{})
	fmt.Printf("listening on %s\n", l.Addr())
	if err := s.Serve(l); err != nil {
		fmt.Fprintf(os.Stderr, "go-testservice: %v\n", err)
		os.Exit(1)
	}
}
