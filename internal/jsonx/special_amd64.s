#include "textflag.h"

// Each constant is one byte repeated over 32 bytes.
DATA consts<>+0x00(SB)/8, $0x2222222222222222 // '"'
DATA consts<>+0x08(SB)/8, $0x2222222222222222
DATA consts<>+0x10(SB)/8, $0x2222222222222222
DATA consts<>+0x18(SB)/8, $0x2222222222222222
DATA consts<>+0x20(SB)/8, $0x5c5c5c5c5c5c5c5c // '\\'
DATA consts<>+0x28(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA consts<>+0x30(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA consts<>+0x38(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA consts<>+0x40(SB)/8, $0x2020202020202020 // 0x20
DATA consts<>+0x48(SB)/8, $0x2020202020202020
DATA consts<>+0x50(SB)/8, $0x2020202020202020
DATA consts<>+0x58(SB)/8, $0x2020202020202020
DATA consts<>+0x60(SB)/8, $0x3c3c3c3c3c3c3c3c // '<'
DATA consts<>+0x68(SB)/8, $0x3c3c3c3c3c3c3c3c
DATA consts<>+0x70(SB)/8, $0x3c3c3c3c3c3c3c3c
DATA consts<>+0x78(SB)/8, $0x3c3c3c3c3c3c3c3c
DATA consts<>+0x80(SB)/8, $0x3e3e3e3e3e3e3e3e // '>'
DATA consts<>+0x88(SB)/8, $0x3e3e3e3e3e3e3e3e
DATA consts<>+0x90(SB)/8, $0x3e3e3e3e3e3e3e3e
DATA consts<>+0x98(SB)/8, $0x3e3e3e3e3e3e3e3e
DATA consts<>+0xa0(SB)/8, $0x2626262626262626 // '&'
DATA consts<>+0xa8(SB)/8, $0x2626262626262626
DATA consts<>+0xb0(SB)/8, $0x2626262626262626
DATA consts<>+0xb8(SB)/8, $0x2626262626262626
GLOBL consts<>(SB), RODATA|NOPTR, $0xc0

// func blockMaskAVX2(p *byte) uint64
TEXT ·blockMaskAVX2(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	VMOVDQU consts<>+0x40(SB), Y4 // 0x20

	VMOVDQU (SI), Y0
	VPCMPEQB consts<>+0x00(SB), Y0, Y5 // Y5 = b == '"'
	VPCMPEQB consts<>+0x20(SB), Y0, Y6 // Y6 = b == '\\'
	VPOR Y5, Y6, Y5
	VPCMPGTB Y0, Y4, Y6 // Y6 = 0x20 > b, signed: below 0x20 or at or above 0x80
	VPANDN Y6, Y0, Y6   // Y6 = Y6 &^ b: the high bit cleared for bytes at or above 0x80
	VPOR Y5, Y6, Y5
	VPMOVMSKB Y5, AX

	VMOVDQU 32(SI), Y1
	VPCMPEQB consts<>+0x00(SB), Y1, Y5
	VPCMPEQB consts<>+0x20(SB), Y1, Y6
	VPOR Y5, Y6, Y5
	VPCMPGTB Y1, Y4, Y6
	VPANDN Y6, Y1, Y6
	VPOR Y5, Y6, Y5
	VPMOVMSKB Y5, BX

	SHLQ $32, BX
	ORQ BX, AX
	VZEROUPPER
	MOVQ AX, ret+8(FP)
	RET

// func unsafeMaskAVX2(p *byte) uint32
TEXT ·unsafeMaskAVX2(SB), NOSPLIT, $0-12
	MOVQ p+0(FP), SI
	VMOVDQU (SI), Y0
	VMOVDQU consts<>+0x40(SB), Y1
	VPCMPGTB Y0, Y1, Y2                // Y2 = 0x20 > b, signed: below 0x20 or at or above 0x80
	VPCMPEQB consts<>+0x00(SB), Y0, Y3 // '"'
	VPOR Y3, Y2, Y2
	VPCMPEQB consts<>+0x20(SB), Y0, Y3 // '\\'
	VPOR Y3, Y2, Y2
	VPCMPEQB consts<>+0x60(SB), Y0, Y3 // '<'
	VPOR Y3, Y2, Y2
	VPCMPEQB consts<>+0x80(SB), Y0, Y3 // '>'
	VPOR Y3, Y2, Y2
	VPCMPEQB consts<>+0xa0(SB), Y0, Y3 // '&'
	VPOR Y3, Y2, Y2
	VPMOVMSKB Y2, AX
	VZEROUPPER
	MOVL AX, ret+8(FP)
	RET
