// minimal.go: the smallest correct blocklab process-arm client (protocol v1,
// docs/process-arms.md), standard library only.
//
// Workload `noop`: each transaction busy-waits `busy_ns` nanoseconds
// (param, default 0). Both measure modes: `transactions` (warmup, then
// measured transactions, totals over all workers) and `window` (warmup_s,
// then measured_s seconds). It runs its transactions on one goroutine
// whatever `workers` says. Build: `go build -o minimal-go minimal.go`
// (`make peers` puts it at $(CARGO_TARGET_DIR)/peers/minimal-go).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"time"
)

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
	emit(map[string]interface{}{"hello": map[string]interface{}{"protocol": 1, "client": "minimal-go / " + runtime.Version()}})

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
	emit(map[string]interface{}{"mark": "warmup"})
	start := time.Now()
	switch req.Measure.Mode {
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
	elapsed := time.Since(start).Seconds()
	emit(map[string]interface{}{"mark": "measured-end"})

	pairs := [][2]int64{}
	for v, n := range latency {
		pairs = append(pairs, [2]int64{v, n})
	}
	emit(map[string]interface{}{"result": map[string]interface{}{
		"warmup": warmup, "measured": measured, "measured_s": elapsed,
		"errors": 0, "errors_by_kind": map[string]int64{}, "retries": 0,
		"counters": map[string]int64{}, "latency_ns": pairs,
	}})
}
