// Package archtest holds the tests of the module's architecture as ARCHITECTURE.md draws it;
// it has no code. TestImportGraph holds the import graph of ARCHITECTURE.md (the fenced
// block whose info string is "imports") to the one `go list` reports.
package archtest
