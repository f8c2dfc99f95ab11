package main

// Valgrind's callgrind client requests for counted runs (docs/process-arms.md,
// "Counted runs"): CALLGRIND_START_INSTRUMENTATION at the `measured` mark,
// CALLGRIND_DUMP_STATS and CALLGRIND_STOP_INSTRUMENTATION at `measured-end`.
// A request is valgrind.h's magic instruction sequence, which Go can only
// execute from assembly (callgrind_amd64.s); natively it does nothing.

// callgrindBase is VG_USERREQ_TOOL_BASE('C', 'T') (callgrind.h).
const callgrindBase = uint64('C')<<24 | uint64('T')<<16

func callgrindStart() {
	args := [6]uint64{callgrindBase + 4}
	clientRequest(&args)
}

func callgrindDumpAndStop() {
	dump := [6]uint64{callgrindBase}
	clientRequest(&dump)
	stop := [6]uint64{callgrindBase + 5}
	clientRequest(&stop)
}
