#include "textflag.h"

// func blockMaskAVX2(p *byte) uint64
TEXT ·blockMaskAVX2(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ $0x2222222222222222, AX // '"'
	MOVQ AX, X2
	VPBROADCASTQ X2, Y2
	MOVQ $0x5c5c5c5c5c5c5c5c, AX // '\\'
	MOVQ AX, X3
	VPBROADCASTQ X3, Y3
	MOVQ $0x2020202020202020, AX // 0x20
	MOVQ AX, X4
	VPBROADCASTQ X4, Y4

	VMOVDQU (SI), Y0
	VPCMPEQB Y0, Y2, Y5  // Y5 = b == '"'
	VPCMPEQB Y0, Y3, Y6  // Y6 = b == '\\'
	VPOR Y5, Y6, Y5
	VPCMPGTB Y0, Y4, Y6  // Y6 = 0x20 > b, signed: below 0x20 or at or above 0x80
	VPANDN Y6, Y0, Y6    // Y6 = Y6 &^ b: the high bit cleared for bytes at or above 0x80
	VPOR Y5, Y6, Y5
	VPMOVMSKB Y5, AX

	VMOVDQU 32(SI), Y1
	VPCMPEQB Y1, Y2, Y5
	VPCMPEQB Y1, Y3, Y6
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
