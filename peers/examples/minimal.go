// minimal.go: the smallest correct blocklab process-arm client (protocol v1,
// docs/process-arms.md), standard library only.
//
// Workload `noop`: each transaction busy-waits `busy_ns` nanoseconds
// (param, default 0). Every measure mode: `transactions` (warmup, then
// measured transactions, totals over all workers), `window` (warmup_s,
// then measured_s seconds) and `rate` (the request's `schedule`: each
// transaction starts at its intended time, latency counts from that time).
// It runs its transactions on one goroutine whatever `workers` says (in
// rate mode: every worker's share of the schedule, merged). In a duet it
// waits at the request's `start_barrier` before its warmup. Build: `go build -o minimal-go minimal.go`
// (`make peers` puts it at $(CARGO_TARGET_DIR)/peers/minimal-go).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"runtime"
	"time"
)

// lateNs: a start this much after its intended time is late.
const lateNs = 1000000

// schedule is rate mode's: the run's rate and each worker's share.
type schedule struct {
	Arrival string `json:"arrival"`
	Workers []struct {
		RatePerS float64 `json:"rate_per_s"`
		PhaseS   float64 `json:"phase_s"`
		Seed     int64   `json:"seed"`
	} `json:"workers"`
}

type request struct {
	Protocol int                `json:"protocol"`
	Workload string             `json:"workload"`
	Params   map[string]float64 `json:"params"`
	Measure  struct {
		Mode      string  `json:"mode"`
		Warmup    int64   `json:"warmup"`
		Measured  int64   `json:"measured"`
		WarmupS   float64 `json:"warmup_s"`
		MeasuredS float64 `json:"measured_s"`
	} `json:"measure"`
	Schedule schedule `json:"schedule"`
	// A duet's start barrier, a Unix socket; empty outside a duet.
	StartBarrier string `json:"start_barrier"`
}

// stream is one worker's intended starts, seconds after the warmup mark.
type stream struct {
	next  float64
	k     float64
	share int
	rng   *rand.Rand
}

// advance moves to the stream's next intended start. Poisson gaps come
// from Go's own seeded generator: the same seed gives the same schedule
// here, not in other languages.
func (s *stream) advance(sch *schedule) {
	w := sch.Workers[s.share]
	if sch.Arrival == "poisson" {
		s.next += s.rng.ExpFloat64() / w.RatePerS
		return
	}
	s.next = w.PhaseS + s.k/w.RatePerS // no accumulated rounding
	s.k++
}

// awaitStart waits at a duet's start barrier (docs/process-arms.md,
// "Duets") until the host releases every partner run. Byte 1 is go;
// end-of-file (or a barrier already gone) means a partner failed, and this
// run must not measure alone. The same code is in peers/go-ingest/main.go:
// this file stands alone.
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
	fmt.Fprintf(os.Stderr, "minimal-go: the duet's start barrier was broken%s: a partner run failed before it could start, so this one does not measure alone\n", why)
	os.Exit(1)
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

// runRate keeps the schedule from t0 (the warmup mark): each transaction
// starts at its intended time, never skipped while behind; one the window's
// end overtook is scheduled but not started. It marks `measured` and
// returns the warmup count, the measured seconds, the open-loop account and
// the latency from the intended start.
func runRate(req *request, one func()) (int64, float64, map[string]interface{}, map[int64]int64) {
	sch := &req.Schedule
	t0 := time.Now()
	warmEnd := t0.Add(time.Duration(req.Measure.WarmupS * 1e9))
	end := warmEnd.Add(time.Duration(req.Measure.MeasuredS * 1e9))
	streams := make([]*stream, len(sch.Workers))
	for i, w := range sch.Workers {
		streams[i] = &stream{next: w.PhaseS, share: i, rng: rand.New(rand.NewSource(w.Seed))}
		streams[i].advance(sch)
	}
	latency, lag, service := map[int64]int64{}, map[int64]int64{}, map[int64]int64{}
	var warmup, scheduled, started, late int64
	var start time.Time
	markMeasured := func() {
		waitUntil(warmEnd)
		emit(map[string]interface{}{"mark": "measured"})
		// The window is the schedule's, even when a worker still busy with
		// warmup marks it late.
		start = warmEnd
	}
	for len(streams) > 0 {
		s := streams[0]
		for _, o := range streams[1:] {
			if o.next < s.next {
				s = o
			}
		}
		intended := t0.Add(time.Duration(s.next * 1e9))
		s.advance(sch)
		if !intended.Before(end) {
			break
		}
		measured := !intended.Before(warmEnd)
		if measured && start.IsZero() {
			markMeasured()
		}
		if measured {
			scheduled++
		}
		if !time.Now().Before(end) {
			continue
		}
		waitUntil(intended)
		began := time.Now()
		one()
		done := time.Now()
		if !measured {
			warmup++
			continue
		}
		started++
		if began.Sub(intended) > lateNs {
			late++
		}
		lag[round3(began.Sub(intended).Nanoseconds())]++
		service[round3(done.Sub(began).Nanoseconds())]++
		latency[round3(done.Sub(intended).Nanoseconds())]++
	}
	if start.IsZero() {
		markMeasured()
	}
	waitUntil(end)
	return warmup, time.Since(start).Seconds(), map[string]interface{}{
		"scheduled": scheduled, "started": started, "late": late,
		"start_lag_ns": pairs(lag), "service_ns": pairs(service),
	}, latency
}

// pairs is a histogram in the protocol's encoding: [value_ns, count].
func pairs(h map[int64]int64) [][2]int64 {
	out := [][2]int64{}
	for v, n := range h {
		out = append(out, [2]int64{v, n})
	}
	return out
}

// emit writes one event line; os.Stdout is unbuffered, so it is flushed.
func emit(event map[string]interface{}) {
	line, _ := json.Marshal(event)
	fmt.Println(string(line))
}

// round3 keeps 3 significant digits, as the protocol asks of latencies.
func round3(v int64) int64 {
	m := int64(1)
	for v/m >= 1000 {
		m *= 10
	}
	return (v + m/2) / m * m
}

func main() {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintf(os.Stderr, "minimal-go: cannot read the run request on stdin: %v\n", err)
		os.Exit(2)
	}
	if req.Protocol != 1 {
		fmt.Fprintf(os.Stderr, "minimal-go: speaks protocol 1, the request is protocol %d\n", req.Protocol)
		os.Exit(2)
	}
	if req.Workload != "noop" {
		fmt.Fprintf(os.Stderr, "minimal-go: unknown workload `%s`; this client has `noop`\n", req.Workload)
		os.Exit(2)
	}
	busy := time.Duration(req.Params["busy_ns"])
	emit(map[string]interface{}{"hello": map[string]interface{}{"protocol": 1, "client": "minimal-go / " + runtime.Version(),
		"modes": []string{"transactions", "window", "rate"}, "features": []string{"start-barrier"}}})

	latency := map[int64]int64{}
	one := func(measured bool) {
		t0 := time.Now()
		for time.Since(t0) < busy {
		}
		if measured {
			latency[round3(time.Since(t0).Nanoseconds())]++
		}
	}
	var warmup, measured int64
	var elapsed float64
	var openLoop map[string]interface{}
	if req.StartBarrier != "" {
		awaitStart(req.StartBarrier)
	}
	emit(map[string]interface{}{"mark": "warmup"})
	start := time.Now()
	switch req.Measure.Mode {
	case "rate":
		warmup, elapsed, openLoop, latency = runRate(&req, func() {
			for t0 := time.Now(); time.Since(t0) < busy; {
			}
		})
		for _, n := range latency {
			measured += n
		}
	case "transactions":
		for ; warmup < req.Measure.Warmup; warmup++ {
			one(false)
		}
		emit(map[string]interface{}{"mark": "measured"})
		start = time.Now()
		for ; measured < req.Measure.Measured; measured++ {
			one(true)
		}
	case "window":
		for end := start.Add(time.Duration(req.Measure.WarmupS * 1e9)); time.Now().Before(end); warmup++ {
			one(false)
		}
		emit(map[string]interface{}{"mark": "measured"})
		start = time.Now()
		for end := start.Add(time.Duration(req.Measure.MeasuredS * 1e9)); time.Now().Before(end); measured++ {
			one(true)
		}
	default:
		fmt.Fprintf(os.Stderr, "minimal-go: unknown measure mode `%s`\n", req.Measure.Mode)
		os.Exit(2)
	}
	if req.Measure.Mode != "rate" {
		elapsed = time.Since(start).Seconds()
	}
	emit(map[string]interface{}{"mark": "measured-end"})

	result := map[string]interface{}{
		"warmup": warmup, "measured": measured, "measured_s": elapsed,
		"errors": 0, "errors_by_kind": map[string]int64{}, "retries": 0,
		"counters": map[string]int64{}, "latency_ns": pairs(latency),
	}
	if openLoop != nil {
		result["open_loop"] = openLoop
	}
	emit(map[string]interface{}{"result": result})
}
