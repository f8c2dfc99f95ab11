//go:build !amd64

package main

// clientRequest: counted runs need amd64; elsewhere a request does nothing.
func clientRequest(args *[6]uint64) uint64 { return 0 }

// injectLoop: a loop the compiler keeps; its instruction count per
// iteration is exact only on amd64 (callgrind_amd64.s).
func injectLoop(n uint64) {
	for i := uint64(0); i < n; i++ {
		injectSink = i
	}
}

var injectSink uint64
