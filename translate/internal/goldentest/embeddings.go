package goldentest

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/agate-gateway/agate/translate"
)

// EmbedDialect is one backend's embedding wire whose recorded answers are golden cases:
// every *.txtar in Dir is one recorded answer (not streamed), so adding a recording is
// adding a file. Its comment says
//
//	fixture: <path under testdata/fixtures>   the recorded answer (or an upstream.json section)
//	inputs: N                                  the size of the batch it answered
//
// and its sections want.float.json and want.base64.json are the client's answer in each
// encoding_format (model EmbedModel), written by Encode.
//
// Besides the goldens, every case holds what a split stream is held to in Run: the
// answer cut short at any offset (the offsets CheckSplits takes, bounded for long
// answers) is an upstream error that keeps no vector, and the answer asked for one input
// more or fewer than it has is one too.
type EmbedDialect struct {
	Embedder translate.Embedder
	// Encode writes the client's answer for e (embeddingsin.AppendBody: the dialect
	// packages cannot import the client side).
	Encode func(e *translate.Embeddings, base64 bool) []byte
	// Dir is the directory of the cases.
	Dir string
}

// EmbedModel is the client-facing model the want.*.json sections are encoded with.
const EmbedModel = "client-embedder"

var (
	fixtureLine = regexp.MustCompile(`(?m)^fixture: (\S+)$`)
	inputsLine  = regexp.MustCompile(`(?m)^inputs: (\d+)$`)
)

// RunEmbeddings runs every case of d.Dir.
func RunEmbeddings(t *testing.T, d EmbedDialect) {
	files, err := filepath.Glob(filepath.Join(d.Dir, "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no embedding cases in %s (%v)", d.Dir, err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			body := Lookup(ar, "upstream.json")
			if m := fixtureLine.FindSubmatch(ar.Comment); body == nil && m != nil {
				body = ReadFixture(t, string(m[1]))
			}
			m := inputsLine.FindSubmatch(ar.Comment)
			if body == nil || m == nil {
				t.Fatalf("%s needs a fixture: line (or an upstream.json section) and an inputs: line", path)
			}
			n, _ := strconv.Atoi(string(m[1]))
			var e translate.Embeddings
			if err := d.Embedder.DecodeEmbeddings(body, n, &e); err != nil {
				t.Fatalf("DecodeEmbeddings: %v", err)
			}
			for _, b64 := range []bool{false, true} {
				name := "want.float.json"
				if b64 {
					name = "want.base64.json"
				}
				got := d.Encode(&e, b64)
				if !json.Valid(got) {
					t.Fatalf("%s is not JSON: %.200s", name, got)
				}
				Golden(t, path, name, got)
			}
			d.refusals(t, body, n)
		})
	}
}

// refusals checks that the answer cut short, or read for a batch of another size, is an
// upstream error that keeps no vector.
func (d EmbedDialect) refusals(t *testing.T, body []byte, n int) {
	t.Helper()
	fails := func(what string, b []byte, n int) {
		t.Helper()
		out := translate.Embeddings{}
		err := d.Embedder.DecodeEmbeddings(b, n, &out)
		if err == nil || !errors.Is(err, translate.ErrUpstream) || len(out.Vectors) != 0 {
			t.Fatalf("%s: error %v (an upstream error?), %d vectors kept", what, err, len(out.Vectors))
		}
	}
	fails("one input more", body, n+1)
	if n > 1 {
		fails("one input fewer", body, n-1)
	}
	trimmed := bytes.TrimRight(body, " \r\n\t")
	for _, i := range cutOffsets(len(trimmed)) {
		fails("cut at byte "+strconv.Itoa(i), trimmed[:i], n)
	}
}

// cutOffsets are the lengths an answer of n bytes is cut to: every length of an answer up
// to 4 KiB; of a longer one every length within its first 512 and last 256 bytes and
// about 4 MiB / n lengths evenly spaced between (each cut decodes up to n bytes).
func cutOffsets(n int) []int {
	var out []int
	if n <= 4096 {
		for i := 0; i < n; i++ {
			out = append(out, i)
		}
		return out
	}
	for i := 0; i < 512; i++ {
		out = append(out, i)
	}
	even := max(1, (4<<20)/n)
	for k := 1; k <= even; k++ {
		if j := 512 + k*(n-768)/(even+1); j > 512 && j < n-256 {
			out = append(out, j)
		}
	}
	for i := n - 256; i < n; i++ {
		out = append(out, i)
	}
	return out
}
