//go:build !purego

#include "textflag.h"

// Each constant is one byte repeated over 32 bytes: REPEAT32 writes v at off four times.
#define REPEAT32(off, v) \
	DATA consts<>+(off)(SB)/8, v; \
	DATA consts<>+(off+8)(SB)/8, v; \
	DATA consts<>+(off+16)(SB)/8, v; \
	DATA consts<>+(off+24)(SB)/8, v

REPEAT32(0x00, $0x2222222222222222) // '"'
REPEAT32(0x20, $0x5c5c5c5c5c5c5c5c) // '\\'
REPEAT32(0x40, $0x2020202020202020) // 0x20
REPEAT32(0x60, $0x3c3c3c3c3c3c3c3c) // '<'
REPEAT32(0x80, $0x3e3e3e3e3e3e3e3e) // '>'
REPEAT32(0xa0, $0x2626262626262626) // '&'
REPEAT32(0xc0, $0x2f2f2f2f2f2f2f2f) // '/'
REPEAT32(0xe0, $0x7575757575757575) // 'u'
REPEAT32(0x100, $0x0f0f0f0f0f0f0f0f) // the low nibble

// TABLE16 writes a 16-byte lookup table at off twice, nibbles 7..0 in lo and F..8 in
// hi: VPSHUFB looks up each 128-bit lane apart.
#define TABLE16(off, lo, hi) \
	DATA consts<>+(off)(SB)/8, lo; \
	DATA consts<>+(off+8)(SB)/8, hi; \
	DATA consts<>+(off+16)(SB)/8, lo; \
	DATA consts<>+(off+24)(SB)/8, hi

// The two halves of a nibble lookup of the bytes JSON allows after a backslash
// (" / \ b f n r t u): a byte is allowed when escHigh[its high nibble] &
// escLow[its low nibble] is not zero. Each high nibble that has allowed bytes has a bit
// (2: 1, 5: 2, 6: 4, 7: 8); escLow sets, for each low nibble, the bits of the high
// nibbles it makes an allowed byte with: 2 with 2, 6 and 7 (" b r), 4 and 5 with 7 (t u),
// 6 and E with 6 (f n), C with 5 (\), F with 2 (/).
TABLE16(0x120, $0x0804020000010000, $0x0000000000000000) // escHigh
TABLE16(0x140, $0x00040808000d0000, $0x0104000200000000) // escLow
REPEAT32(0x160, $0x5f5f5f5f5f5f5f5f) // 0x5f, below the escapes b f n r t u

// escLow without 'u' (low nibble 5 with high nibble 7): with escHigh, the bytes JSON
// allows after a backslash less u, whose hex digits escapedEnd checks in Go.
TABLE16(0x180, $0x00040008000d0000, $0x0104000200000000) // escLowNoU
GLOBL consts<>(SB), RODATA|NOPTR, $0x1a0

// NOAVX2 starts each loop kernel (stopBlocks, safeBlocks, asciiBlocks, escapedBlocks,
// literalBlocks): where useAVX2 is false it jumps to the kernel's Go twin, which has the
// same arguments and results and returns to the kernel's caller.
#define NOAVX2(twin) \
	CMPB ·useAVX2(SB), $0; \
	JNE  2(PC); \
	JMP  twin

// SPECIAL32 sets m to the special bytes of the 32 bytes in x (quotes, backslashes, bytes
// below 0x20), given the quote and the backslash constants in q and b (registers or
// memory) and 0x20 in Y4; it clobbers t. VPCMPGTB is signed: the bytes below 0x20 and
// those at or above 0x80 compare below 0x20, and the VPANDN clears the latter's high bit.
#define SPECIAL32(x, q, b, m, t) \
	VPCMPEQB q, x, m; \
	VPCMPEQB b, x, t; \
	VPOR m, t, m; \
	VPCMPGTB x, Y4, t; \
	VPANDN t, x, t; \
	VPOR m, t, m

// SPECIALCONSTS loads the constants SPECIAL32 reads: 0x20 into c20, '"' into q and '\\'
// into b.
#define SPECIALCONSTS(c20, q, b) \
	VMOVDQU consts<>+0x40(SB), c20; \
	VMOVDQU consts<>+0x00(SB), q; \
	VMOVDQU consts<>+0x20(SB), b

// func blockMaskAVX2(p *byte) uint64
TEXT ·blockMaskAVX2(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	VMOVDQU consts<>+0x40(SB), Y4 // 0x20
	VMOVDQU (SI), Y0
	SPECIAL32(Y0, consts<>+0x00(SB), consts<>+0x20(SB), Y5, Y6)
	VPMOVMSKB Y5, AX
	VMOVDQU 32(SI), Y1
	SPECIAL32(Y1, consts<>+0x00(SB), consts<>+0x20(SB), Y5, Y6)
	VPMOVMSKB Y5, BX
	SHLQ $32, BX
	ORQ BX, AX
	VZEROUPPER
	MOVQ AX, ret+8(FP)
	RET

// func stopBlocks(p *byte, n int) (k int, mask uint64)
//
// blockMaskAVX2's mask over the whole blocks of n bytes (a multiple of 64) at p, block
// after block, until one has a stop: k is that block's offset and mask its mask; k is n
// and mask 0 when none has. Registers: DI the offset, Y7 '"', Y8 '\\', Y4 0x20; per
// block Y5 and Y2 the halves' masks.
TEXT ·stopBlocks(SB), NOSPLIT, $0-32
	NOAVX2(·stopBlocksGo(SB))
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	XORQ DI, DI
	SPECIALCONSTS(Y4, Y7, Y8)

sb_loop:
	CMPQ DI, CX
	JAE  sb_none
	VMOVDQU (SI)(DI*1), Y0
	SPECIAL32(Y0, Y7, Y8, Y5, Y6)
	VMOVDQU 32(SI)(DI*1), Y1
	SPECIAL32(Y1, Y7, Y8, Y2, Y3)
	VPOR Y5, Y2, Y3
	VPMOVMSKB Y3, AX
	TESTL AX, AX
	JNZ  sb_found
	ADDQ $64, DI
	JMP  sb_loop

sb_found:
	VPMOVMSKB Y5, AX
	VPMOVMSKB Y2, BX
	SHLQ $32, BX
	ORQ  BX, AX
	MOVQ AX, mask+24(FP)
	MOVQ DI, k+16(FP)
	VZEROUPPER
	RET

sb_none:
	MOVQ $0, mask+24(FP)
	MOVQ DI, k+16(FP)
	VZEROUPPER
	RET

// func safeBlocks(p *byte, n int) int
TEXT ·safeBlocks(SB), NOSPLIT, $0-24
	NOAVX2(·safeBlocksGo(SB))
	SPECIALCONSTS(Y1, Y5, Y6)
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	XORQ AX, AX
	VMOVDQU consts<>+0x60(SB), Y7 // '<'
	VMOVDQU consts<>+0x80(SB), Y8 // '>'
	VMOVDQU consts<>+0xa0(SB), Y9 // '&'

safe_loop:
	LEAQ 32(AX), DX
	CMPQ DX, CX
	JA   safe_done
	VMOVDQU (SI)(AX*1), Y0
	VPCMPGTB Y0, Y1, Y2 // Y2 = 0x20 > b, signed: below 0x20 or at or above 0x80
	VPCMPEQB Y5, Y0, Y3
	VPOR Y3, Y2, Y2
	VPCMPEQB Y6, Y0, Y3
	VPOR Y3, Y2, Y2
	VPCMPEQB Y7, Y0, Y3
	VPOR Y3, Y2, Y2
	VPCMPEQB Y8, Y0, Y3
	VPOR Y3, Y2, Y2
	VPCMPEQB Y9, Y0, Y3
	VPOR Y3, Y2, Y2
	VPMOVMSKB Y2, BX
	TESTL BX, BX
	JNZ  safe_found
	MOVQ DX, AX
	JMP  safe_loop

safe_found:
	TZCNTL BX, BX
	ADDQ BX, AX

safe_done:
	VZEROUPPER
	MOVQ AX, ret+16(FP)
	RET

// NIBBLES sets r to the nibble lookup of the 32 bytes in x: high[each byte's high
// nibble] & low[its low nibble], given 0x0f in each byte of nib; it clobbers t.
#define NIBBLES(x, nib, high, low, r, t) \
	VPSRLW $4, x, r; \
	VPAND nib, r, r; \
	VPSHUFB r, high, r; \
	VPAND nib, x, t; \
	VPSHUFB t, low, t; \
	VPAND t, r, r

// ESCSPECIAL reads the 32 bytes at off(SI) into Y0 and sets Y1 to their backslashes, Y3
// to their quotes and Y6 to their quotes and bytes below 0x20. Y5 must hold 0x20 in each
// byte. VPCMPGTB is signed: the bytes below 0x20 and those at or above 0x80 compare below
// 0x20, and the VPANDN clears the latter's high bit.
#define ESCSPECIAL(off) \
	VMOVDQU off(SI), Y0; \
	VPCMPEQB consts<>+0x20(SB), Y0, Y1; \
	VPCMPEQB consts<>+0x00(SB), Y0, Y3; \
	VPCMPGTB Y0, Y5, Y6; \
	VPANDN Y6, Y0, Y6; \
	VPOR Y3, Y6, Y6

// ESCCORE is ESCSPECIAL, and sets Y4 to the bytes not found by the nibble lookup of
// escHigh (Y9) and the low table in Y10 (escLow: the bytes JSON does not allow after a
// backslash). Y5 must hold 0x20 in each byte, Y8 0x0f and Y11 zero (ESCCONSTS).
#define ESCCORE(off) \
	ESCSPECIAL(off); \
	NIBBLES(Y0, Y8, Y9, Y10, Y7, Y4); \
	VPCMPEQB Y11, Y7, Y4

// ESCAPE32 sets, for the 32 bytes at off(SI), R8 to the mask of the backslashes, R9 to
// that of the u bytes, R10 to that of the bytes JSON does not allow after a backslash
// (all but " \\ / b f n r t u, found by the nibble lookup of escHigh and escLow) and R11
// to the special mask (as blockMaskAVX2: quotes, backslashes, bytes below 0x20). Y5 must
// hold 0x20 in each byte, Y8 0x0f, Y9 escHigh, Y10 escLow and Y11 zero (ESCCONSTS).
#define ESCAPE32(off) \
	ESCCORE(off); \
	VPCMPEQB consts<>+0xe0(SB), Y0, Y2; \
	VPOR Y1, Y6, Y6; \
	VPMOVMSKB Y1, R8; \
	VPMOVMSKB Y2, R9; \
	VPMOVMSKB Y4, R10; \
	VPMOVMSKB Y6, R11

// ESCCONSTS loads the constants ESCAPE32 reads from registers.
#define ESCCONSTS \
	VMOVDQU consts<>+0x40(SB), Y5; \
	VMOVDQU consts<>+0x100(SB), Y8; \
	VMOVDQU consts<>+0x120(SB), Y9; \
	VMOVDQU consts<>+0x140(SB), Y10; \
	VPXOR Y11, Y11, Y11

// KEEP3 keeps the three masks of a block's first half (R8, R9, R10) in AX, CX and DX;
// JOIN3 puts those of its second half above them.
#define KEEP3 MOVQ R8, AX; MOVQ R9, CX; MOVQ R10, DX
#define JOIN3 \
	SHLQ $32, R8; ORQ R8, AX; \
	SHLQ $32, R9; ORQ R9, CX; \
	SHLQ $32, R10; ORQ R10, DX

// ESCAPE64 is ESCAPE32 over the 64 bytes at SI, the masks in AX (backslashes), CX (u
// bytes), DX (bytes not allowed after a backslash) and BX (the special mask).
#define ESCAPE64 \
	ESCAPE32(0); KEEP3; MOVQ R11, BX; \
	ESCAPE32(32); JOIN3; SHLQ $32, R11; ORQ R11, BX

// func escapeMaskAVX2(p *byte) (special, bs, bad, u uint64)
TEXT ·escapeMaskAVX2(SB), NOSPLIT, $0-40
	MOVQ p+0(FP), SI
	ESCCONSTS
	ESCAPE64
	VZEROUPPER
	MOVQ BX, special+8(FP)
	MOVQ AX, bs+16(FP)
	MOVQ DX, bad+24(FP)
	MOVQ CX, u+32(FP)
	RET

// ADDEQ adds to acc the bytes of Y0 equal to the constant at consts<>+c (Y3 is scratch).
#define ADDEQ(c, acc) VPCMPEQB consts<>+c(SB), Y0, Y3; VPOR Y3, acc, acc

// LITERAL32 sets, for the 32 bytes at off(SI), R8 to the mask of the bytes AppendString
// cannot copy as they are (as safeBlocks tests them), R9 to that of the backslashes and R10 to
// that of the bytes '/' and 'u' (the escapes AppendString writes otherwise).
#define LITERAL32(off) \
	VMOVDQU off(SI), Y0; \
	VPCMPGTB Y0, Y1, Y2; \
	VPCMPEQB consts<>+0x20(SB), Y0, Y5; \
	VPOR Y5, Y2, Y2; \
	ADDEQ(0x00, Y2); \
	ADDEQ(0x60, Y2); \
	ADDEQ(0x80, Y2); \
	ADDEQ(0xa0, Y2); \
	VPCMPEQB consts<>+0xc0(SB), Y0, Y6; \
	ADDEQ(0xe0, Y6); \
	VPMOVMSKB Y2, R8; \
	VPMOVMSKB Y5, R9; \
	VPMOVMSKB Y6, R10

// func literalMaskAVX2(p *byte) (unsafe, bs, chg uint64)
TEXT ·literalMaskAVX2(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	VMOVDQU consts<>+0x40(SB), Y1 // 0x20
	LITERAL32(0)
	KEEP3
	LITERAL32(32)
	JOIN3
	VZEROUPPER
	MOVQ AX, unsafe+8(FP)
	MOVQ CX, bs+16(FP)
	MOVQ DX, chg+24(FP)
	RET

// func literalHalfAVX2(p *byte) (unsafe, bs, chg uint64)
TEXT ·literalHalfAVX2(SB), NOSPLIT, $0-32
	VMOVDQU consts<>+0x40(SB), Y1 // 0x20
	MOVQ p+0(FP), SI
	LITERAL32(0)
	VZEROUPPER
	MOVQ R8, unsafe+8(FP)
	MOVQ R9, bs+16(FP)
	MOVQ R10, chg+24(FP)
	RET

// func asciiBlocks(p *byte, n int) int
TEXT ·asciiBlocks(SB), NOSPLIT, $0-24
	NOAVX2(·asciiBlocksGo(SB))
	XORQ AX, AX
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX

ascii_loop:
	LEAQ 128(AX), DX
	CMPQ DX, CX
	JA   ascii_done
	VMOVDQU (SI)(AX*1), Y0
	VPOR    32(SI)(AX*1), Y0, Y0
	VPOR    64(SI)(AX*1), Y0, Y0
	VPOR    96(SI)(AX*1), Y0, Y0
	VPMOVMSKB Y0, BX
	TESTL BX, BX
	JNZ  ascii_done
	MOVQ DX, AX
	JMP  ascii_loop

ascii_done:
	VZEROUPPER
	MOVQ AX, ret+16(FP)
	RET

// ESCAPED is escapedBytes (special.go) in registers: given a block's backslashes in R8
// and the carry into it (0 or 1) in R13, it sets R10 to the escaped bytes and R11 to the
// carry out; it clobbers R8 and R9. The LEAQ is bs<<1 | carry (bit 0 of bs<<1 is clear,
// so the OR is an addition). MOVQ $0 before the ADDQ leaves the flags alone, so ADCQ
// takes the addition's carry.
#define ESCAPED \
	MOVQ R13, R9; NOTQ R9; ANDQ R9, R8; \
	LEAQ (R13)(R8*2), R9; \
	MOVQ $0xaaaaaaaaaaaaaaaa, R10; ANDQ R8, R10; MOVQ R9, R11; NOTQ R11; ANDQ R11, R10; \
	MOVQ $0, R11; ADDQ R8, R10; ADCQ $0, R11; \
	SHLQ $1, R10; MOVQ $0x5555555555555555, R8; XORQ R8, R10; ANDQ R9, R10

// ESCAPEDSINGLE is ESCAPED's answer for a block none of whose backslashes (in bs) is
// escaped: none follows another, and none is its first byte with an escape carried in
// (R13). Each then escapes the byte after it, so the escaped bytes (R10) are bs<<1 | carry
// and the carry out (R11) is the block's last byte's backslash, without ESCAPED's run
// arithmetic; JSON sent as a string (\" every few bytes, no \\) is read so. Any other
// block jumps to runs, which does ESCAPED (with the backslashes in R8). It leaves bs as
// it was.
#define ESCAPEDSINGLE(bs, runs) \
	LEAQ (R13)(bs*2), R10; \
	TESTQ bs, R10; \
	JNZ  runs; \
	MOVQ bs, R11; \
	SHRQ $63, R11

// ESCSCAN32 sets, for the 32 bytes at off(SI), R8 to the mask of the backslashes, R10 to
// that of the quotes and R11 to that of the quotes and the bytes below 0x20 (the special
// bytes less the backslashes). Y5 must hold 0x20 in each byte.
#define ESCSCAN32(off) \
	ESCSPECIAL(off); \
	VPMOVMSKB Y1, R8; \
	VPMOVMSKB Y3, R10; \
	VPMOVMSKB Y6, R11

// LOOKCONSTS loads the constants of the loops that look up the bytes JSON allows after a
// backslash less u (IDXLOOK): 0x20 into Y5, 0x0f into Y8, escHigh into Y9,
// escLowNoU into Y10 and zero into Y11.
#define LOOKCONSTS \
	VMOVDQU consts<>+0x40(SB), Y5; \
	VMOVDQU consts<>+0x100(SB), Y8; \
	VMOVDQU consts<>+0x120(SB), Y9; \
	VMOVDQU consts<>+0x180(SB), Y10; \
	VPXOR Y11, Y11, Y11

// IDXLOOK sets r to the mask of the 32 bytes in x that indexBlocks must look at when
// escaped (all but " \\ / b f n r t: as ESCLOOP32's, by the nibble lookup of escHigh and
// escLowNoU), given 0x0f in Y8, escHigh in Y9, escLowNoU in Y10 and zero in Y11; it
// clobbers Y4 and Y7.
#define IDXLOOK(x, r) \
	NIBBLES(x, Y8, Y9, Y10, Y7, Y4); \
	VPCMPEQB Y11, Y7, Y4; \
	VPMOVMSKB Y4, r

// func escapedBlocks(p *byte, n int, window, carry uint64) (k, end int, special, next uint64, status int)
//
// Registers: SI the block, DI its offset k, R14 n, R12 the window, R13 the carry into the
// block; per block AX the backslashes, BX the quotes and bytes below 0x20, DX its quotes,
// then the bytes to look at when escaped (IDXLOOK), R10 the escaped bytes, R11 the carry
// out, R8 the stops, R9 the bytes checked. A block whose escaped bytes are all quotes and
// backslashes (JSON sent as a string: \" and \\), which JSON allows after one, has none
// to look at: it skips the lookup.
TEXT ·escapedBlocks(SB), NOSPLIT, $0-72
	NOAVX2(·escapedBlocksGo(SB))
	LOOKCONSTS
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), R14
	MOVQ window+16(FP), R12
	MOVQ carry+24(FP), R13
	XORQ DI, DI

eb_loop:
	CMPQ DI, R14
	JAE  eb_more
	ESCSCAN32(0)
	MOVQ R8, AX
	MOVQ R10, DX
	MOVQ R11, BX
	ESCSCAN32(32)
	SHLQ $32, R8
	ORQ  R8, AX
	SHLQ $32, R10
	ORQ  R10, DX
	SHLQ $32, R11
	ORQ  R11, BX

	MOVQ AX, R8
	ANDQ R12, R8 // the backslashes in the window
	ESCAPEDSINGLE(R8, eb_runs)

eb_escaped:
	// the escaped bytes other than quotes and backslashes: if any, the lookup's
	ORQ  AX, DX
	NOTQ DX
	ANDQ R10, DX
	JZ   eb_stops
	VMOVDQU 0(SI), Y0
	IDXLOOK(Y0, DX)
	VMOVDQU 32(SI), Y0
	IDXLOOK(Y0, R8)
	SHLQ $32, R8
	ORQ  R8, DX

eb_stops:
	// stops = (quotes | bytes below 0x20) & window &^ escaped
	MOVQ R10, R8
	NOTQ R8
	ANDQ BX, R8
	ANDQ R12, R8

	// check = window, less the bytes from the first stop on
	MOVQ  R12, R9
	TESTQ R8, R8
	JZ    eb_checks
	MOVQ  R8, CX
	NEGQ  CX
	ANDQ  R8, CX
	DECQ  CX
	ANDQ  CX, R9

eb_checks:
	ANDQ  R10, DX
	TESTQ R9, DX
	JNZ   eb_slow // an escaped byte to look at: a bad escape, or a \u one
	TESTQ R8, R8
	JNZ   eb_found
	MOVQ  R11, R13
	MOVQ  $-1, R12
	ADDQ  $64, SI
	ADDQ  $64, DI
	JMP   eb_loop

eb_found:
	ORQ  AX, BX // the special mask: with the backslashes
	BSFQ R8, AX
	ADDQ DI, AX
	MOVQ AX, end+40(FP)
	MOVQ BX, special+48(FP)
	MOVQ R11, next+56(FP)
	MOVQ $1, status+64(FP)
	JMP  eb_ret

eb_slow:
	MOVQ R13, next+56(FP) // the carry into this block, which Go reads again
	MOVQ $2, status+64(FP)
	JMP  eb_ret

eb_more:
	MOVQ R13, next+56(FP)
	MOVQ $0, status+64(FP)

eb_ret:
	VZEROUPPER
	MOVQ DI, k+32(FP)
	RET

eb_runs: // a run of backslashes, or one escaped by the carry
	ESCAPED
	JMP  eb_escaped

// func literalBlocks(p *byte, n int, carry uint64) (k int, next, unsafe, bs, chg uint64)
//
// Registers: SI the block, DI its offset k, R14 n, R13 the carry into the block; per
// block AX the unsafe bytes, CX the backslashes, DX the bytes '/' and 'u', R10 the
// escaped bytes, R11 the carry out, R8 the stops.
TEXT ·literalBlocks(SB), NOSPLIT, $0-64
	NOAVX2(·literalBlocksGo(SB))
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), R14
	MOVQ carry+16(FP), R13
	XORQ DI, DI
	VMOVDQU consts<>+0x40(SB), Y1 // 0x20

lb_loop:
	CMPQ DI, R14
	JAE  lb_done
	LITERAL32(0)
	KEEP3
	LITERAL32(32)
	JOIN3
	MOVQ R14, R8
	SUBQ DI, R8
	CMPQ R8, $64
	JAE  lb_whole
	// A block that ends past n: its bytes from n on are not the literal's.
	MOVQ CX, R9
	MOVQ R8, CX
	MOVQ $1, R8
	SHLQ CX, R8
	DECQ R8
	MOVQ R9, CX
	ANDQ R8, AX
	ANDQ R8, CX
	ANDQ R8, DX

lb_whole:
	MOVQ AX, R8
	ORQ  R13, R8
	JZ   lb_next // nothing to stop at, and no escape running into the block

	ESCAPEDSINGLE(CX, lb_runs)

lb_escaped:
	// stops = unsafe &^ bs &^ escaped | escaped & chg
	MOVQ CX, R8
	NOTQ R8
	ANDQ AX, R8
	MOVQ R10, R9
	NOTQ R9
	ANDQ R9, R8
	ANDQ DX, R10
	ORQ  R10, R8
	JNZ  lb_stop // AppendLiteral reads this block, with the carry into it
	MOVQ R11, R13

lb_next:
	ADDQ $64, SI
	ADDQ $64, DI
	JMP  lb_loop

lb_stop:
	MOVQ AX, unsafe+40(FP)
	MOVQ CX, bs+48(FP)
	MOVQ DX, chg+56(FP)

lb_done:
	VZEROUPPER
	MOVQ DI, k+24(FP)
	MOVQ R13, next+32(FP)
	RET

lb_runs: // a run of backslashes, or one escaped by the carry
	MOVQ CX, R8
	ESCAPED
	JMP  lb_escaped

// UNESC8 writes the bytes kept of the eight at off(R8) to DI, given the mask of those to
// drop in the low byte of R9 (which it shifts down by eight): the compacting shuffle for
// the mask is entry AX of the table at R12. DI moves past the bytes kept. UNESC64 does
// the block's eight words.
#define UNESC8(off) \
	MOVBQZX R9, AX; \
	SHRQ $8, R9; \
	VMOVQ off(R8), X7; \
	VMOVQ (R12)(AX*8), X8; \
	VPSHUFB X8, X7, X7; \
	VMOVQ X7, (DI); \
	POPCNTL AX, AX; \
	ADDQ $8, DI; \
	SUBQ AX, DI
#define UNESC64 \
	UNESC8(0); UNESC8(8); UNESC8(16); UNESC8(24); UNESC8(32); UNESC8(40); UNESC8(48); UNESC8(56)

// func unescapeBlocksAVX2(dst, src *byte, n int, compact *[256]uint64) (read, written int)
//
// A block that ends past n has the bits of its bytes from n on cleared in its masks (R9
// the bytes kept), so that they are copied as they are and counted out at the end.
// Registers: SI src, BX the block's offset, R14 n, DI where the next byte goes, R12
// compact, R13 the carry into the block; per block R8 its backslashes (then its address),
// DX the same, R10 the escaped bytes, R11 the carry out, R9 the backslashes dropped, CX
// the escaped bytes above 0x5f (b f n r t u), then DX the escaped u. Y2 holds '\\', Y4
// 0x5f, Y5 'u'.
//
// A block with an escaped b f n r t or u (ub_escapes) is written with DX where it starts
// and R13 its drops. An escaped b f n r t is written as it is, then overwritten with its
// character where it went (ub_tr): its offset in the block less the drops before it.
// The character is nibble (c>>2)&15 of a constant: 8 for b, 9 f, 11 n, 12 r, 13 t. A \u
// escape ends the reading at its backslash: only what comes before is written, and R11
// holds 2 + the backslash's offset in the block instead of the carry.
TEXT ·unescapeBlocksAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), R14
	MOVQ compact+24(FP), R12
	XORQ BX, BX
	XORQ R13, R13
	VMOVDQU consts<>+0x20(SB), Y2  // '\\'
	VMOVDQU consts<>+0x160(SB), Y4 // 0x5f
	VMOVDQU consts<>+0xe0(SB), Y5  // 'u'

	PCALIGN $64

ub_loop:
	CMPQ BX, R14
	JAE  ub_end
	VMOVDQU (SI)(BX*1), Y0
	VMOVDQU 32(SI)(BX*1), Y1
	VPCMPEQB Y0, Y2, Y3
	VPMOVMSKB Y3, R8
	VPCMPEQB Y1, Y2, Y3
	VPMOVMSKB Y3, AX
	SHLQ $32, AX
	ORQ  AX, R8
	MOVQ $-1, R9 // the bytes of the block before n
	MOVQ R14, CX
	SUBQ BX, CX
	CMPQ CX, $64
	JAE  ub_whole
	MOVQ $1, R9
	SHLQ CX, R9
	DECQ R9
	ANDQ R9, R8

ub_whole:
	VPCMPGTB Y4, Y0, Y3 // above 0x5f and below 0x80 (signed)
	VPMOVMSKB Y3, CX
	VPCMPGTB Y4, Y1, Y3
	VPMOVMSKB Y3, AX
	SHLQ $32, AX
	ORQ  AX, CX
	ANDQ R9, CX
	MOVQ R8, DX
	ESCAPEDSINGLE(R8, ub_runs)

ub_escaped:
	// The backslashes that start an escape are dropped; every other byte goes as it is.
	MOVQ R10, R9
	NOTQ R9
	ANDQ DX, R9
	LEAQ (SI)(BX*1), R8
	ANDQ R10, CX
	JNZ  ub_escapes // an escape other than \" \\ \/
	TESTQ R9, R9
	JZ   ub_plain
	UNESC64
	JMP  ub_next

ub_plain:
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	ADDQ $64, DI

ub_next:
	MOVQ R11, R13
	ADDQ $64, BX
	JMP  ub_loop

ub_escapes:
	VPCMPEQB Y0, Y5, Y3
	VPMOVMSKB Y3, DX
	VPCMPEQB Y1, Y5, Y3
	VPMOVMSKB Y3, AX
	SHLQ $32, AX
	ORQ  AX, DX
	ANDQ CX, DX
	JZ   ub_write
	TZCNTQ DX, R11 // the first escaped u
	DECQ R11       // its backslash, -1 for the block before's last byte
	JMI  ub_before
	MOVQ DX, R10
	NEGQ R10
	ANDQ DX, R10
	SHRQ $1, R10
	DECQ R10 // the bytes before the backslash
	ANDQ R10, R9
	ANDQ R10, CX
	ADDQ $2, R11

ub_write:
	MOVQ DI, DX
	MOVQ R9, R13
	UNESC64
	TESTQ CX, CX
	JZ   ub_written
	MOVQ CX, R9

ub_tr:
	TZCNTQ R9, AX
	MOVBQZX (R8)(AX*1), CX // the letter escaped
	MOVQ R9, R10
	NEGQ R10
	ANDQ R9, R10
	DECQ R10
	ANDQ R13, R10
	POPCNTQ R10, R10
	ADDQ DX, AX
	SUBQ R10, AX // where it went
	SHRQ $2, CX
	ANDQ $15, CX
	SHLQ $2, CX
	MOVQ $0x9da0c800000000, R10
	SHRQ CX, R10
	ANDL $15, R10
	MOVB R10, (AX)
	LEAQ -1(R9), R10
	ANDQ R10, R9
	JNZ  ub_tr

ub_written:
	CMPQ R11, $2
	JB   ub_next // R11 is the carry out
	SUBQ $2, R11 // the \u escape's backslash
	POPCNTQ R13, R10
	LEAQ (DX)(R11*1), DI
	SUBQ R10, DI
	ADDQ R11, BX
	JMP  ub_ret

ub_before:
	DECQ BX
	JMP  ub_ret

ub_end:
	// Past n, the last block's bytes were copied as they are: they are not counted.
	MOVQ BX, AX
	SUBQ R14, AX
	SUBQ AX, DI
	MOVQ R14, BX
	SUBQ R13, BX // a backslash last, which escapes the byte at n: read from it

ub_ret:
	VZEROUPPER
	MOVQ BX, read+32(FP)
	SUBQ dst+0(FP), DI
	MOVQ DI, written+40(FP)
	RET

ub_runs: // a run of backslashes, or one escaped by the carry
	ESCAPED
	JMP  ub_escaped

// IDXCTRL keeps in Y12 the least of each byte of the blocks read and x: a byte below
// 0x20 among them leaves one in Y12 (see indexBlocks' end).
#define IDXCTRL(x) VPMINUB x, Y12, Y12

// func indexBlocks(p *byte, n int, dst *uint64, carry uint64) (k int, next, look, ctrl uint64)
//
// Registers: SI the block, DI its offset k, R14 n, CX the block's two words in dst, R13
// the carry into the block; per block Y0 and Y13 its halves, AX its backslashes, BX its
// quotes, DX the bytes to look at when escaped (IDXLOOK), R10 the escaped bytes, R11 the
// carry out; Y12 the least of each byte of the blocks read (IDXCTRL). A block without a
// backslash into which no escape carries has no escaped byte: its words are its quotes
// and zero, without the lookup and escapedBytes. A block whose escaped bytes are all
// quotes and backslashes, which JSON allows after one, has none to look at: it skips the
// lookup.
TEXT ·indexBlocks(SB), NOSPLIT, $0-64
	NOAVX2(·indexBlocksGo(SB))
	LOOKCONSTS
	VMOVDQU consts<>+0x20(SB), Y14
	VPCMPEQB Y12, Y12, Y12
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), R14
	MOVQ dst+16(FP), CX
	MOVQ carry+24(FP), R13
	XORQ DI, DI

ix_loop:
	CMPQ DI, R14
	JAE  ix_all
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y13
	VPCMPEQB Y14, Y0, Y1
	VPCMPEQB Y14, Y13, Y2
	VPCMPEQB consts<>+0x00(SB), Y0, Y3
	VPCMPEQB consts<>+0x00(SB), Y13, Y6
	IDXCTRL(Y0)
	IDXCTRL(Y13)
	VPMOVMSKB Y1, AX
	VPMOVMSKB Y2, R8
	SHLQ $32, R8
	ORQ  R8, AX
	VPMOVMSKB Y3, BX
	VPMOVMSKB Y6, R8
	SHLQ $32, R8
	ORQ  R8, BX
	MOVQ AX, R8
	ORQ  R13, R8
	JNZ  ix_escapes
	MOVQ BX, (CX)
	MOVQ AX, 8(CX)
	ADDQ $16, CX
	ADDQ $64, SI
	ADDQ $64, DI
	JMP  ix_loop

ix_escapes:
	MOVQ AX, R8
	ESCAPEDSINGLE(R8, ix_runs)

ix_escaped:
	// the block's words: the quotes not escaped, the backslashes
	MOVQ R10, R9
	NOTQ R9
	ANDQ BX, R9
	MOVQ R9, (CX)
	MOVQ AX, 8(CX)
	ADDQ $16, CX
	ADDQ $64, SI
	ADDQ $64, DI
	MOVQ R11, R13

	// An escaped quote or backslash is never one to look at: a block whose escaped bytes
	// are all quotes and backslashes (JSON sent as a string: \" and \\) skips the lookup.
	MOVQ BX, R8
	ORQ  AX, R8
	NOTQ R8
	ANDQ R10, R8
	JZ   ix_loop
	IDXLOOK(Y0, DX)
	IDXLOOK(Y13, R8)
	SHLQ $32, R8
	ORQ  R8, DX
	ANDQ R10, DX // the escaped bytes to look at
	JZ   ix_loop
	MOVQ DX, look+48(FP)
	JMP  ix_ret

ix_all:
	MOVQ $0, look+48(FP)

ix_ret:
	// ctrl: the bytes of Y12 below 0x20, those 0x20 less which (saturated) is not zero
	VPSUBUSB Y12, Y5, Y4
	VPCMPEQB Y11, Y4, Y4
	VPMOVMSKB Y4, AX
	NOTL AX
	MOVQ AX, ctrl+56(FP)
	VZEROUPPER
	MOVQ DI, k+32(FP)
	MOVQ R13, next+40(FP)
	RET

ix_runs: // a run of backslashes, or one escaped by the carry
	ESCAPED
	JMP  ix_escaped
