//go:build amd64

package main

// clientRequest issues one Valgrind client request (callgrind_amd64.s).
func clientRequest(args *[6]uint64) uint64
