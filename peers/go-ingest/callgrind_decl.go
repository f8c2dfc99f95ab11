//go:build amd64

package main

// clientRequest issues one Valgrind client request (callgrind_amd64.s).
func clientRequest(args *[6]uint64) uint64

// injectLoop runs n iterations of a two-instruction loop (callgrind_amd64.s).
func injectLoop(n uint64)
