// Package jsonx is the gateway's one way to read and write JSON on its hot paths: a
// validating single-pass Scanner (the request parser and every upstream stream decoder
// walk their input with it), the string escaper (AppendString) and the one
// bytes-to-string View. It depends on the standard library and golang.org/x/sys/cpu (to
// know whether the CPU has AVX2, for the assembly that scans strings) only, and must not
// import any other package of the module.
package jsonx
