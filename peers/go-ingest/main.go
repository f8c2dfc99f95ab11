// go-ingest: seed 004's ingest client on grpc-go, as a blocklab process arm
// (protocol v1, docs/process-arms.md).
//
// Usage: blocklab spawns it with the run request on stdin, e.g.
//
//	[[arms]]
//	name = "grpc-go-shared"
//	client = { kind = "process", command = ["target/peers/go-ingest"] }
//	target = { kind = "grpc", endpoint = "local:grpc-ingest", connections = "shared" }
//
// By hand: `make peers`, then
//
//	echo '{"protocol":1,"workload":"ingest","target":{"kind":"grpc","endpoint":"http://127.0.0.1:50051","connections":"shared"},
//	  "params":{},"seed":1,"workers":4,"measure":{"mode":"window","warmup_s":1,"measured_s":3},"call_deadline_ms":10000}' \
//	  | target/peers/go-ingest
//
// Workloads, the same as the grpc-ingest plugin's (crates/ingest/src/ingest.rs):
//   - `ingest`: one /ingest.v1.Ingest/Stream per worker; each transaction sends
//     one batch of `batch_records` records of `record_bytes` bytes with gapless
//     offsets, first waiting for acks while more than `max_in_flight` records
//     would be unacknowledged. Counters `acked_records`, `acked_bytes` (window
//     deltas). A transaction's latency is the plugin's: from its start (the
//     wait for room included) to its batch sent. Each measured batch's send
//     to the first ack covering it goes to histogram `ack_latency_ns`. After
//     the window (after the measured-end mark) each worker half-closes its
//     stream, on which the server acks all it has, and reads the acks of its
//     measured batches. A failed transaction is one error; batches a broken
//     stream never acknowledged are not (they were sent), as in the plugin.
//   - `unary` (alias `echo`): one /ingest.v1.Echo/Echo of `payload_bytes` bytes.
//
// Every measure mode. In `rate` mode each worker keeps its share of the
// request's `schedule` (docs/process-arms.md, "Rate mode"): it starts each
// transaction (`ingest`: a batch, so records/s = rate × batch_records) at
// its intended time, or as soon as it is free when behind, never skipping
// one; latency counts from the intended start to the transaction's end (the
// batch sent, or the reply), service time from the actual start. Connection policies (`target.connections`): "shared" =
// one ClientConn for all workers, "per-stream" = one ClientConn per stream
// (per worker; unary calls share one, as blocklab's own client does), N = a
// pool of N ClientConns, workers round-robin. Each grpc.Dial is its own
// TCP connection. Messages are encoded by hand (a raw-bytes codec, no
// generated code), so it builds offline against Debian's golang-google-grpc-dev.
// Like the plugin, a worker reads acks only when its in-flight limit makes it
// wait, so the implementations compare the same loop. `call_deadline_ms`
// bounds connecting and each unary call; a stalled stream is bounded by the
// host's `run_timeout_s`, which kills the process group. Exit status: 0 after
// the result, 2 for a request this client cannot serve (unknown workload,
// param, mode or policy), 1 when the run fails (connect, setup, warmup, a
// duet's broken start barrier). In a duet it waits at the request's
// `start_barrier` once its streams are open, before its warmup.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

const (
	streamMethod = "/ingest.v1.Ingest/Stream"
	echoMethod   = "/ingest.v1.Echo/Echo"
)

type measure struct {
	Mode      string  `json:"mode"`
	Warmup    uint64  `json:"warmup"`
	Measured  uint64  `json:"measured"`
	WarmupS   float64 `json:"warmup_s"`
	MeasuredS float64 `json:"measured_s"`
}

type request struct {
	Protocol int    `json:"protocol"`
	Workload string `json:"workload"`
	Target   struct {
		Kind        string          `json:"kind"`
		Endpoint    string          `json:"endpoint"`
		Connections json.RawMessage `json:"connections"`
	} `json:"target"`
	Params         map[string]interface{} `json:"params"`
	Seed           uint64                 `json:"seed"`
	Workers        int                    `json:"workers"`
	Measure        measure                `json:"measure"`
	CallDeadlineMs uint64                 `json:"call_deadline_ms"`
	Schedule       schedule               `json:"schedule"`
	// "callgrind" in a counted run (docs/process-arms.md, "Counted runs").
	Counters string `json:"counters"`
	// A test arm's known work before each transaction (docs/process-arms.md,
	// "Injected work"); 0 when absent.
	InjectLoopIterations uint64 `json:"inject_loop_iterations"`
	// A duet's start barrier, a Unix socket (docs/process-arms.md,
	// "Duets"); empty outside a duet.
	StartBarrier string `json:"start_barrier"`
}

// --- rate mode ---

// lateNs: a start this much after its intended time is late.
const lateNs = 1000000

// schedule is rate mode's: each worker's share of the run's rate.
type schedule struct {
	Arrival string `json:"arrival"`
	Workers []struct {
		RatePerS float64 `json:"rate_per_s"`
		PhaseS   float64 `json:"phase_s"`
		Seed     int64   `json:"seed"`
	} `json:"workers"`
}

// stream is one worker's intended starts, seconds after the warmup mark.
type stream struct {
	next, k float64
	share   int
	rng     *rand.Rand
}

func newStream(sch *schedule, share int) *stream {
	w := sch.Workers[share]
	s := &stream{next: w.PhaseS, share: share, rng: rand.New(rand.NewSource(w.Seed))}
	s.advance(sch)
	return s
}

// advance moves to the next intended start. Poisson gaps come from Go's
// own seeded generator: the same seed gives the same schedule here, not in
// other languages.
func (s *stream) advance(sch *schedule) {
	w := sch.Workers[s.share]
	if sch.Arrival == "poisson" {
		s.next += s.rng.ExpFloat64() / w.RatePerS
		return
	}
	s.next = w.PhaseS + s.k/w.RatePerS // no accumulated rounding
	s.k++
}

// waitUntil sleeps for the bulk, then spins the last millisecond: a sleep
// may wake late by its timer slack, a spin does not.
func waitUntil(deadline time.Time) {
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		if left > 2*lateNs {
			time.Sleep(left - lateNs)
		} else {
			runtime.Gosched()
		}
	}
}

// at is a rate-mode transaction's intended and actual start.
type at struct{ intended, began time.Time }

// rateLoop keeps worker w's share of the schedule from t0 (the warmup
// mark) to end; a start the window's end overtook is scheduled but not
// started. It returns the worker's counters when its measured part began.
func rateLoop(w worker, t *tally, s *stream, sch *schedule, t0, warmEnd, end time.Time) map[string]uint64 {
	var before map[string]uint64
	for {
		intended := t0.Add(time.Duration(s.next * 1e9))
		s.advance(sch)
		if !intended.Before(end) {
			break
		}
		measured := !intended.Before(warmEnd)
		if measured && before == nil {
			waitUntil(warmEnd)
			before = w.counters()
			t.batchBy(0, end.Sub(warmEnd), warmEnd)
		}
		if measured {
			t.scheduled++
		}
		if !time.Now().Before(end) {
			continue
		}
		waitUntil(intended)
		began := time.Now()
		err := w.run(t, measured, &at{intended, began})
		if !measured {
			if err != nil {
				fatal("warmup failed: %v", err)
			}
			t.warmup++
			continue
		}
		lag := began.Sub(intended)
		if lag > lateNs {
			t.late++
		}
		t.lag[round3(uint64(lag.Nanoseconds()))]++
		t.started++
		t.measured++
		if err != nil {
			t.fail(err)
		}
	}
	if before == nil {
		waitUntil(warmEnd)
		before = w.counters()
	}
	waitUntil(end)
	return before
}

// usage exits 2: the request asks for something this client does not do.
func usage(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "go-ingest: "+format+"\n", args...)
	os.Exit(2)
}

// fatal exits 1: the run failed (setup, warmup, a closed connection).
func fatal(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "go-ingest: "+format+"\n", args...)
	os.Exit(1)
}

// awaitStart waits at a duet's start barrier until the host releases every
// partner run. Byte 1 is go; end-of-file (or a barrier already gone) means
// a partner failed, and this run must not measure alone.
func awaitStart(path string) {
	conn, err := net.Dial("unix", path)
	if err == nil {
		b := []byte{0}
		_, err = conn.Read(b)
		conn.Close()
		if err == nil && b[0] == 1 {
			return
		}
	}
	why := ""
	if err != nil && err != io.EOF {
		why = " (" + err.Error() + ")"
	}
	fatal("the duet's start barrier was broken%s: a partner run failed before it could start, so this one does not measure alone", why)
}

// counted: the request asked for a counted run; the window's client
// requests are issued at its marks (callgrind_amd64.s).
var counted bool

func emit(event map[string]interface{}) {
	// The window is exactly the measured transactions: instrumentation on
	// after the `measured` mark is written, dumped and off before
	// `measured-end`.
	if counted && event["mark"] == "measured-end" {
		callgrindDumpAndStop()
	}
	defer func() {
		if counted && event["mark"] == "measured" {
			callgrindStart()
		}
	}()
	line, err := json.Marshal(event)
	if err != nil {
		fatal("cannot encode an event: %v", err)
	}
	if _, err := fmt.Fprintln(os.Stdout, string(line)); err != nil {
		fatal("cannot write an event: %v", err)
	}
}

// rawCodec passes []byte through: the messages are encoded by hand.
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec marshals *[]byte, not %T", v)
	}
	// A copy: grpc-go may still be writing the returned slice after SendMsg
	// returns, and the caller reuses its buffer (proto.Marshal allocates too).
	return append([]byte(nil), *b...), nil
}

func (rawCodec) Unmarshal(data []byte, v interface{}) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec unmarshals into *[]byte, not %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

// Name is "proto": the bytes are protobuf, so the content type is the usual one.
func (rawCodec) Name() string { return "proto" }

// --- ingest.v1 wire format (host/proto/ingest.proto) ---

func putVarint(buf []byte, v uint64) []byte {
	for v >= 0x80 {
		buf = append(buf, byte(v)|0x80)
		v >>= 7
	}
	return append(buf, byte(v))
}

func varintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// encodeBatch writes Batch{records: n Records from offset first, each with payload}.
func encodeBatch(buf []byte, first, n uint64, payload []byte) []byte {
	buf = buf[:0]
	for off := first; off < first+n; off++ {
		recLen := 0
		if off != 0 { // proto3 leaves default values out
			recLen += 1 + varintLen(off)
		}
		if len(payload) > 0 {
			recLen += 1 + varintLen(uint64(len(payload))) + len(payload)
		}
		buf = append(buf, 1<<3|2)
		buf = putVarint(buf, uint64(recLen))
		if off != 0 {
			buf = append(buf, 1<<3|0)
			buf = putVarint(buf, off)
		}
		if len(payload) > 0 {
			buf = append(buf, 2<<3|2)
			buf = putVarint(buf, uint64(len(payload)))
			buf = append(buf, payload...)
		}
	}
	return buf
}

// batchLenBound is the most bytes a batch of n records of payloadLen can take.
func batchLenBound(n, payloadLen uint64) uint64 {
	p := uint64(0)
	if payloadLen > 0 {
		p = 1 + uint64(varintLen(payloadLen)) + payloadLen
	}
	rec := 11 + p
	return n * (1 + uint64(varintLen(rec)) + rec)
}

func getVarint(b []byte, at *int) (uint64, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if *at >= len(b) {
			return 0, errors.New("a message ends inside a varint (malformed protobuf)")
		}
		c := b[*at]
		*at++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("a varint is longer than 10 bytes (malformed protobuf)")
}

// field walks a message's fields, calling f with each field number, wire
// type and (for length-delimited fields) its bytes or (varints) its value.
func fields(b []byte, f func(num uint64, varint uint64, bytes []byte)) error {
	at := 0
	for at < len(b) {
		key, err := getVarint(b, &at)
		if err != nil {
			return err
		}
		switch key & 7 {
		case 0:
			v, err := getVarint(b, &at)
			if err != nil {
				return err
			}
			f(key>>3, v, nil)
		case 2:
			n, err := getVarint(b, &at)
			if err != nil {
				return err
			}
			if n > uint64(len(b)-at) {
				return errors.New("a field runs past the end of its message (malformed protobuf)")
			}
			f(key>>3, 0, b[at:at+int(n)])
			at += int(n)
		default:
			return fmt.Errorf("unexpected wire type %d (malformed protobuf)", key&7)
		}
	}
	return nil
}

func decodeAck(b []byte) (uint64, error) {
	var next uint64
	err := fields(b, func(num, v uint64, _ []byte) {
		if num == 1 {
			next = v
		}
	})
	return next, err
}

func decodeEchoLen(b []byte) (int, error) {
	n := 0
	err := fields(b, func(num, _ uint64, bytes []byte) {
		if num == 1 {
			n = len(bytes)
		}
	})
	return n, err
}

// --- results ---

// round3 keeps 3 significant digits, as the protocol asks of latencies.
func round3(v uint64) uint64 {
	m := uint64(1)
	for v/m >= 1000 {
		m *= 10
	}
	return (v + m/2) / m * m
}

// tally is one worker's outcome; workers merge theirs at the end.
type tally struct {
	warmup, measured, errors uint64
	errorsByKind             map[string]uint64
	latency                  map[uint64]uint64
	// ingest: each measured batch's send to the first ack covering it.
	ack      map[uint64]uint64
	counters map[string]uint64
	// Rate mode only.
	scheduled, started, late uint64
	lag, service             map[uint64]uint64
	// The measured window in batches (docs/process-arms.md, "Batches"):
	// every batchSize transactions, or every batchSlice of the window.
	batchSize                uint64
	batchSlice               time.Duration
	batchStart               time.Time
	batchCount, batchLatency uint64
	bCount, bLatency, bWall  []uint64
}

// batchesPerWorker matches blocklab's own workers (run::batches).
const batchesPerWorker = 64

// batchBy makes the tally cut its measured window into batches: of a
// worker's `measured` transactions, or of `window` of time.
func (t *tally) batchBy(measured uint64, window time.Duration, start time.Time) {
	if measured > 0 {
		t.batchSize = (measured + batchesPerWorker - 1) / batchesPerWorker
	} else {
		t.batchSlice = window / batchesPerWorker
	}
	t.batchStart = start
}

// batch adds one successful measured transaction that ended at now.
func (t *tally) batch(now time.Time, latency uint64) {
	if t.batchStart.IsZero() {
		return
	}
	t.batchCount++
	t.batchLatency += latency
	if (t.batchSize > 0 && t.batchCount >= t.batchSize) ||
		(t.batchSlice > 0 && now.Sub(t.batchStart) >= t.batchSlice) {
		t.closeBatch(now)
	}
}

func (t *tally) closeBatch(now time.Time) {
	if t.batchCount == 0 {
		return
	}
	t.bCount = append(t.bCount, t.batchCount)
	t.bLatency = append(t.bLatency, t.batchLatency)
	wall := uint64(now.Sub(t.batchStart).Nanoseconds())
	if wall == 0 {
		wall = 1
	}
	t.bWall = append(t.bWall, wall)
	t.batchStart, t.batchCount, t.batchLatency = now, 0, 0
}

func newTally() *tally {
	return &tally{errorsByKind: map[string]uint64{}, latency: map[uint64]uint64{}, ack: map[uint64]uint64{}, counters: map[string]uint64{},
		lag: map[uint64]uint64{}, service: map[uint64]uint64{}}
}

// done records a measured transaction that ended at now: latency from its
// intended start in rate mode (and service time from its actual start),
// else from began.
func (t *tally) done(now, began time.Time, a *at) {
	if a == nil {
		ns := uint64(now.Sub(began).Nanoseconds())
		t.latency[round3(ns)]++
		t.batch(now, ns)
		return
	}
	ns := uint64(now.Sub(a.intended).Nanoseconds())
	t.latency[round3(ns)]++
	t.batch(now, ns)
	t.service[round3(uint64(now.Sub(a.began).Nanoseconds()))]++
}

// fail records a measured transaction that failed with err.
func (t *tally) fail(err error) {
	kind := strings.SplitN(err.Error(), "\n", 2)[0]
	t.errors++
	t.errorsByKind[kind]++
}

func pairs(m map[uint64]uint64) [][2]uint64 {
	out := make([][2]uint64, 0, len(m))
	for v, n := range m {
		out = append(out, [2]uint64{v, n})
	}
	return out
}

// --- workloads ---

// transaction is one workload step on one worker.
// injected runs a test arm's known work before each of a worker's
// transactions.
type injected struct {
	worker
	n uint64
}

func (w injected) run(t *tally, measured bool, a *at) error {
	injectLoop(w.n)
	return w.worker.run(t, measured, a)
}

type worker interface {
	// run performs one transaction; measured ones record latency into t.
	// a is its schedule in rate mode, else nil.
	run(t *tally, measured bool, a *at) error
	// counters reads the worker's cumulative counters.
	counters() map[string]uint64
	// drain waits for what measured transactions still have in flight.
	drain(t *tally)
}

type inFlight struct {
	end      uint64
	sent     time.Time
	measured bool
}

type ingest struct {
	conn                                   *grpc.ClientConn
	recordBytes, batchRecords, maxInFlight uint64
	payload, buf                           []byte
	stream                                 grpc.ClientStream
	cancel                                 context.CancelFunc
	next, acked                            uint64
	inFlight                               []inFlight
	ackedRecords, ackedBytes               uint64
	// Rate mode: a goroutine per stream reads acks as they arrive and
	// stamps them, since a worker waiting for its next intended start is
	// not reading (closed loop reads only when the in-flight limit makes it
	// wait, as the plugin does).
	rate bool
	acks chan ack
}

// ack is one message (or the end) read from a stream, and when.
type ack struct {
	msg []byte
	err error
	at  time.Time
}

func (w *ingest) open() error {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := w.conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, streamMethod, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		cancel()
		return fmt.Errorf("cannot open an ingest stream: %v", err)
	}
	w.stream, w.cancel = s, cancel
	w.next, w.acked, w.inFlight = 0, 0, w.inFlight[:0]
	if w.rate {
		acks := make(chan ack, 4096)
		w.acks = acks
		go func() {
			for {
				var msg []byte
				err := s.RecvMsg(&msg)
				acks <- ack{msg, err, time.Now()}
				if err != nil {
					return
				}
			}
		}()
	}
	return nil
}

// broken drops the stream. Its unacknowledged batches are lost, but their
// transactions succeeded (they were sent); the transaction that found the
// stream broken is the error, as in the plugin.
func (w *ingest) broken() {
	w.cancel()
	w.stream = nil
	w.inFlight = w.inFlight[:0]
}

func (w *ingest) awaitAck(t *tally) error {
	var msg []byte
	var err error
	now := time.Now()
	if w.acks != nil {
		a := <-w.acks
		msg, err, now = a.msg, a.err, a.at
	} else {
		err = w.stream.RecvMsg(&msg)
		now = time.Now()
	}
	if err == io.EOF {
		return fmt.Errorf("the server ended the ingest stream with records unacknowledged\n%d sent, %d acknowledged", w.next, w.acked)
	} else if err != nil {
		return fmt.Errorf("ingest stream failed: %s", describe(streamMethod, err))
	}
	next, err := decodeAck(msg)
	if err != nil {
		return err
	}
	if next < w.acked {
		return fmt.Errorf("ack went backwards: it covers fewer records than an earlier ack\nack up to offset %d, after one up to %d", next, w.acked)
	}
	if next > w.next {
		return fmt.Errorf("ack beyond what was sent: it covers records never sent\nack up to offset %d, %d sent", next, w.next)
	}
	w.ackedRecords += next - w.acked
	w.ackedBytes += (next - w.acked) * w.recordBytes
	w.acked = next
	for len(w.inFlight) > 0 && w.inFlight[0].end <= next {
		if b := w.inFlight[0]; b.measured {
			t.ack[round3(uint64(now.Sub(b.sent).Nanoseconds()))]++
		}
		w.inFlight = w.inFlight[1:]
	}
	return nil
}

func (w *ingest) run(t *tally, measured bool, a *at) error {
	t0 := time.Now()
	if w.stream == nil {
		if err := w.open(); err != nil {
			return err
		}
	}
	for w.next+w.batchRecords-w.acked > w.maxInFlight || len(w.acks) > 0 {
		if err := w.awaitAck(t); err != nil {
			w.broken()
			return err
		}
	}
	w.buf = encodeBatch(w.buf, w.next, w.batchRecords, w.payload)
	if err := w.stream.SendMsg(&w.buf); err != nil {
		if err == io.EOF {
			// The server ended the stream: read the acks it sent before,
			// then its status, which says why.
			for err == io.EOF || err == nil {
				err = w.awaitAck(t)
			}
		} else {
			err = fmt.Errorf("ingest stream failed on send: %s", describe(streamMethod, err))
		}
		w.broken()
		return err
	}
	w.next += w.batchRecords
	sent := time.Now()
	w.inFlight = append(w.inFlight, inFlight{end: w.next, sent: sent, measured: measured})
	if measured {
		t.done(sent, t0, a)
	}
	return nil
}

func (w *ingest) counters() map[string]uint64 {
	return map[string]uint64{"acked_records": w.ackedRecords, "acked_bytes": w.ackedBytes}
}

// drain half-closes the stream, on which the server acknowledges all it
// has (a server acking every N records would otherwise leave the last few
// unacknowledged forever), and reads the acks of what is still in flight.
func (w *ingest) drain(t *tally) {
	if w.stream == nil {
		return
	}
	if err := w.stream.CloseSend(); err != nil {
		w.broken()
		return
	}
	for w.stream != nil && len(w.inFlight) > 0 {
		if err := w.awaitAck(t); err != nil {
			w.broken()
		}
	}
	if w.stream != nil {
		w.cancel()
	}
}

type echo struct {
	conn     *grpc.ClientConn
	request  []byte
	size     int
	deadline time.Duration
}

func (w *echo) run(t *tally, measured bool, a *at) error {
	ctx, cancel := context.WithTimeout(context.Background(), w.deadline)
	defer cancel()
	t0 := time.Now()
	var resp []byte
	if err := w.conn.Invoke(ctx, echoMethod, &w.request, &resp, grpc.ForceCodec(rawCodec{})); err != nil {
		return fmt.Errorf("echo failed: %s", describe(echoMethod, err))
	}
	now := time.Now()
	n, err := decodeEchoLen(resp)
	if err != nil {
		return err
	}
	if n != w.size {
		return fmt.Errorf("echo returned %d bytes for %d sent", n, w.size)
	}
	if measured {
		t.done(now, t0, a)
	}
	return nil
}

// codeNames are gRPC's status names as blocklab writes them (grpc-go's
// codes.Code.String() says "Unimplemented").
var codeNames = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// describe writes a grpc error in blocklab's words, `UNIMPLEMENTED (12) on
// METHOD: message` (crates/catalog/src/status.rs), so each client's errors
// group alike in errors_by_kind; any other error as its text.
func describe(method string, err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return err.Error()
	}
	name := "UNKNOWN_CODE"
	if int(st.Code()) < len(codeNames) {
		name = codeNames[st.Code()]
	}
	said := " (the server sent no message)"
	if st.Message() != "" {
		said = ": " + st.Message()
	}
	return fmt.Sprintf("%s (%d) on %s%s", name, st.Code(), method, said)
}

func (w *echo) counters() map[string]uint64 { return map[string]uint64{} }
func (w *echo) drain(*tally)                {}

// params reads the request's params against a workload's defaults,
// refusing unknown ones.
func params(req *request, defaults map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range req.Params {
		if _, ok := defaults[k]; !ok {
			names := []string{}
			for n := range defaults {
				names = append(names, "`"+n+"`")
			}
			sort.Strings(names)
			usage("unknown param `%s` for workload `%s`; it takes %s", k, req.Workload, strings.Join(names, ", "))
		}
		// A number, or its digits as text (plan params may be either).
		n, err := strconv.ParseUint(strings.TrimSpace(fmt.Sprint(v)), 10, 64)
		if err != nil {
			usage("param `%s` must be a non-negative integer, not %v", k, v)
		}
		out[k] = n
	}
	return out
}

// connections dials the policy's ClientConns; worker i uses conns[i%len].
func connections(req *request) []*grpc.ClientConn {
	policy := strings.Trim(string(req.Target.Connections), `"`)
	n := 1
	switch policy {
	case "", "shared":
	case "per-stream":
		// A connection per stream; unary calls are no streams and share
		// one, as blocklab's own client does (docs/grpc.md).
		if req.Workload == "ingest" {
			n = req.Workers
		}
	default:
		v, err := strconv.Atoi(policy)
		if err != nil || v < 1 {
			usage("`target.connections` must be \"shared\", \"per-stream\" or a pool size of at least 1, not %s", req.Target.Connections)
		}
		n = v
	}
	addr := req.Target.Endpoint
	if strings.HasPrefix(addr, "https://") {
		usage("endpoint `%s`: this client speaks plaintext only; use an http:// endpoint", addr)
	}
	addr = strings.TrimPrefix(addr, "http://")
	conns := make([]*grpc.ClientConn, n)
	for i := range conns {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(req.CallDeadlineMs)*time.Millisecond)
		c, err := grpc.DialContext(ctx, addr, grpc.WithInsecure(), grpc.WithBlock())
		cancel()
		if err != nil {
			fatal("cannot connect to `%s` within call_deadline_ms (%d): %v", req.Target.Endpoint, req.CallDeadlineMs, err)
		}
		conns[i] = c
	}
	return conns
}

func main() {
	var req request
	dec := json.NewDecoder(os.Stdin)
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		usage("cannot read the run request on stdin: %v", err)
	}
	if req.Protocol != 1 {
		usage("speaks protocol 1, the request is protocol %d", req.Protocol)
	}
	counted = req.Counters == "callgrind"
	if req.Target.Kind != "grpc" {
		usage("target kind `%s`: this client needs a `grpc` target", req.Target.Kind)
	}
	if req.Workers < 1 {
		usage("`workers` must be at least 1")
	}
	if req.CallDeadlineMs == 0 {
		req.CallDeadlineMs = 10000
	}
	var p map[string]uint64
	switch req.Workload {
	case "ingest":
		p = params(&req, map[string]uint64{"record_bytes": 1024, "batch_records": 64, "max_in_flight": 4096, "max_message_bytes": 4194304})
		if p["batch_records"] == 0 {
			usage("`batch_records` must be at least 1")
		}
		if b := batchLenBound(p["batch_records"], p["record_bytes"]); b > p["max_message_bytes"] {
			usage("a batch of `batch_records` (%d) records of `record_bytes` (%d) bytes encodes to up to %d bytes, over `max_message_bytes` (%d); lower `batch_records` or `record_bytes`", p["batch_records"], p["record_bytes"], b, p["max_message_bytes"])
		}
		if p["max_in_flight"] < p["batch_records"] {
			usage("`max_in_flight` (%d) must be at least `batch_records` (%d)", p["max_in_flight"], p["batch_records"])
		}
	case "unary", "echo":
		p = params(&req, map[string]uint64{"payload_bytes": 64})
	default:
		usage("unknown workload `%s`; this client has `ingest` and `unary` (alias `echo`)", req.Workload)
	}
	switch req.Measure.Mode {
	case "transactions", "window":
	case "rate":
		if len(req.Schedule.Workers) != req.Workers {
			usage("rate mode needs the request's `schedule` with one share per worker (%d workers, %d shares)", req.Workers, len(req.Schedule.Workers))
		}
	default:
		usage("unknown measure mode `%s`; use `transactions`, `window` or `rate`", req.Measure.Mode)
	}
	emit(map[string]interface{}{"hello": map[string]interface{}{"protocol": 1, "client": "grpc-go " + grpc.Version + " / " + runtime.Version(),
		"modes": []string{"transactions", "window", "rate"}, "features": []string{"inject-loop", "start-barrier"}}})

	rng := rand.New(rand.NewSource(int64(req.Seed))) // seeds are u64; wrapping is fine
	conns := connections(&req)
	workers := make([]worker, req.Workers)
	for i := range workers {
		conn := conns[i%len(conns)]
		switch req.Workload {
		case "ingest":
			payload := make([]byte, p["record_bytes"])
			rng.Read(payload)
			w := &ingest{conn: conn, recordBytes: p["record_bytes"], batchRecords: p["batch_records"], maxInFlight: p["max_in_flight"], payload: payload, rate: req.Measure.Mode == "rate"}
			if err := w.open(); err != nil {
				fatal("%v", err)
			}
			workers[i] = w
		default:
			payload := make([]byte, p["payload_bytes"])
			rng.Read(payload)
			var body []byte // EchoRequest{payload}; proto3 leaves an empty one out
			if len(payload) > 0 {
				body = append(putVarint([]byte{1<<3 | 2}, uint64(len(payload))), payload...)
			}
			workers[i] = &echo{conn: conn, request: body, size: len(payload), deadline: time.Duration(req.CallDeadlineMs) * time.Millisecond}
		}
		if req.InjectLoopIterations > 0 {
			workers[i] = injected{workers[i], req.InjectLoopIterations}
		}
	}

	if req.StartBarrier != "" {
		awaitStart(req.StartBarrier)
	}

	// Warmup, a barrier, the measured phase, then the drain.
	tallies := make([]*tally, len(workers))
	var warmed, windowed, drained sync.WaitGroup
	start := make(chan struct{})
	// Rate mode: the schedule's origin (the warmup mark), set before begin
	// is closed.
	begin := make(chan struct{})
	var t0, warmEnd, end time.Time
	warmed.Add(len(workers))
	windowed.Add(len(workers))
	drained.Add(len(workers))
	split := func(total uint64, i int) uint64 {
		n := uint64(len(workers))
		extra := uint64(0)
		if uint64(i) < total%n {
			extra = 1
		}
		return total/n + extra
	}
	for i, w := range workers {
		t := newTally()
		tallies[i] = t
		go func(i int, w worker, t *tally) {
			m := req.Measure
			if m.Mode == "transactions" {
				for n := split(m.Warmup, i); t.warmup < n; t.warmup++ {
					if err := w.run(t, false, nil); err != nil {
						fatal("warmup failed: %v", err)
					}
				}
			} else if m.Mode == "rate" {
				<-begin
				before := rateLoop(w, t, newStream(&req.Schedule, i), &req.Schedule, t0, warmEnd, end)
				for k, v := range w.counters() {
					t.counters[k] = v - before[k]
				}
				windowed.Done()
				w.drain(t)
				t.closeBatch(time.Now())
				drained.Done()
				return
			} else {
				for end := time.Now().Add(time.Duration(m.WarmupS * 1e9)); time.Now().Before(end); t.warmup++ {
					if err := w.run(t, false, nil); err != nil {
						fatal("warmup failed: %v", err)
					}
				}
			}
			warmed.Done()
			<-start
			if m.Mode == "transactions" {
				t.batchBy(split(m.Measured, i), 0, time.Now())
			} else {
				t.batchBy(0, time.Duration(m.MeasuredS*1e9), time.Now())
			}
			before := w.counters()
			one := func() {
				if err := w.run(t, true, nil); err != nil {
					t.fail(err)
				}
				t.measured++
			}
			if m.Mode == "transactions" {
				for n := split(m.Measured, i); t.measured < n; {
					one()
				}
			} else {
				for end := time.Now().Add(time.Duration(m.MeasuredS * 1e9)); time.Now().Before(end); {
					one()
				}
			}
			for k, v := range w.counters() {
				t.counters[k] = v - before[k]
			}
			windowed.Done()
			w.drain(t)
			t.closeBatch(time.Now())
			drained.Done()
		}(i, w, t)
	}
	var elapsed float64
	if req.Measure.Mode == "rate" {
		t0 = time.Now()
		warmEnd = t0.Add(time.Duration(req.Measure.WarmupS * 1e9))
		end = warmEnd.Add(time.Duration(req.Measure.MeasuredS * 1e9))
		emit(map[string]interface{}{"mark": "warmup"})
		close(begin)
		waitUntil(warmEnd)
		emit(map[string]interface{}{"mark": "measured"})
		started := time.Now()
		windowed.Wait()
		elapsed = time.Since(started).Seconds()
	} else {
		emit(map[string]interface{}{"mark": "warmup"})
		warmed.Wait()
		emit(map[string]interface{}{"mark": "measured"})
		started := time.Now()
		close(start)
		windowed.Wait()
		elapsed = time.Since(started).Seconds()
	}
	emit(map[string]interface{}{"mark": "measured-end"})
	drained.Wait()

	total := newTally()
	for _, t := range tallies {
		total.warmup += t.warmup
		total.measured += t.measured
		total.errors += t.errors
		for k, v := range t.errorsByKind {
			total.errorsByKind[k] += v
		}
		for k, v := range t.latency {
			total.latency[k] += v
		}
		for k, v := range t.ack {
			total.ack[k] += v
		}
		for k, v := range t.counters {
			total.counters[k] += v
		}
		total.scheduled += t.scheduled
		total.started += t.started
		total.late += t.late
		for k, v := range t.lag {
			total.lag[k] += v
		}
		for k, v := range t.service {
			total.service[k] += v
		}
		total.bCount = append(total.bCount, t.bCount...)
		total.bLatency = append(total.bLatency, t.bLatency...)
		total.bWall = append(total.bWall, t.bWall...)
	}
	result := map[string]interface{}{
		"warmup": total.warmup, "measured": total.measured, "measured_s": elapsed,
		"errors": total.errors, "errors_by_kind": total.errorsByKind, "retries": 0,
		"counters": total.counters, "latency_ns": pairs(total.latency),
	}
	if len(total.bCount) > 0 {
		result["batches"] = map[string]interface{}{
			"count": total.bCount, "latency_ns": total.bLatency, "wall_ns": total.bWall,
		}
	}
	if req.Workload == "ingest" {
		result["histograms"] = map[string]interface{}{"ack_latency_ns": pairs(total.ack)}
	}
	if req.Measure.Mode == "rate" {
		result["open_loop"] = map[string]interface{}{
			"scheduled": total.scheduled, "started": total.started, "late": total.late,
			"start_lag_ns": pairs(total.lag), "service_ns": pairs(total.service),
		}
	}
	emit(map[string]interface{}{"result": result})
	for _, c := range conns {
		c.Close()
	}
}
