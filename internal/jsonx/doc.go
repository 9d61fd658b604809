// Package jsonx is the gateway's one way to read and write JSON on its hot paths: a
// validating single-pass Scanner (the request parser and every upstream stream decoder
// walk their input with it), the string escapers (AppendString with encoding/json's rules,
// AppendSlogString with log/slog's), the one bytes-to-string View, and two readers for
// compact layouts read without a Scanner (PlainEnd, a plain string's end eight bytes at a
// time; PlainUint, a plain integer), each refusing what it does not take for a Scanner
// to read; and StringIndex, where a compact text's strings end, found a block at a time
// before a walk reads them (SkipStringIn, StrIn). It depends on the standard library and golang.org/x/sys/cpu (to know whether
// the CPU has AVX2) only, and must not import any other package of the module.
//
// # Kernels
//
// The byte-level work is done by kernels, each a whole operation over blocks of 32, 64
// or 128 bytes, in six families: the bytes that stop a string (kernel_stops.go), the
// escapes of a string (kernel_escapes.go), the bytes the escaper and the literal copier
// cannot copy as they are (kernel_write.go), the ASCII prefix of a body
// (kernel_ascii.go), the decoding of escapes (kernel_unescape.go) and a compact text's
// string index (kernel_index.go). Those files hold
// each kernel's portable Go twin; on amd64 each also has an AVX2 version
// (kernels_amd64.s). The readers and writers call a kernel by one name and never test
// for AVX2: kernels_amd64.go is the one switch, useAVX2, which x/sys/cpu's answer sets
// once before main (GODEBUG=cpu.avx2=off clears it) and each kernel reads once per call
// (the loops over blocks are the assembly itself, which jumps to its twin without AVX2);
// kernels_generic.go is the list of twins for other GOARCHes and for -tags purego, which
// builds the package without assembly and without the unaligned word load of amd64 and
// arm64 (word_unaligned.go). Each family's _amd64_test.go holds the assembly to its
// twin; the other tests hold both to byte-at-a-time definitions.
package jsonx
