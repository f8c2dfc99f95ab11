#include "textflag.h"

// func clientRequest(args *[6]uint64) uint64
// valgrind.h's amd64 client request: rax points at the six request words,
// rdx holds the default answer (0) and receives Valgrind's. The rotations
// of rdi add up to 128 bits and leave it unchanged; `xchg rbx, rbx` is the
// request itself. Bytes, so that the assembler cannot pick another encoding.
TEXT ·clientRequest(SB), NOSPLIT, $0-16
	MOVQ args+0(FP), AX
	XORQ DX, DX
	BYTE $0x48; BYTE $0xC1; BYTE $0xC7; BYTE $0x03 // rol rdi, 3
	BYTE $0x48; BYTE $0xC1; BYTE $0xC7; BYTE $0x0D // rol rdi, 13
	BYTE $0x48; BYTE $0xC1; BYTE $0xC7; BYTE $0x3D // rol rdi, 61
	BYTE $0x48; BYTE $0xC1; BYTE $0xC7; BYTE $0x33 // rol rdi, 51
	BYTE $0x48; BYTE $0x87; BYTE $0xDB             // xchg rbx, rbx
	MOVQ DX, ret+8(FP)
	RET

// func injectLoop(n uint64)
// A test arm's known work (the request's `inject_loop_iterations`): n
// iterations of `dec`, `jnz` between two `lfence`s, 2n instructions, the
// same loop as blocklab's own worker runs (host/src/run/worker/driver.rs).
TEXT ·injectLoop(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	TESTQ CX, CX
	JZ done
	LFENCE
loop:
	DECQ CX
	JNZ loop
	LFENCE
done:
	RET
