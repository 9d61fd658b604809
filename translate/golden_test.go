package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"github.com/agate-gateway/agate/internal/openaitest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate/sse"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

// update reports whether -update was given (the flag is goldentest's, which the external
// tests of this package import).
func update() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// Fixed values the golden outputs are encoded with.
const (
	goldenID      = "chatcmpl-golden"
	goldenModel   = "client-model"
	goldenCreated = 1700000000
)

// fixturesDir is the repository's testdata/fixtures (recorded provider traffic, with its
// provenance in SOURCES.md) seen from this package.
var fixturesDir = filepath.Join("..", "testdata", "fixtures")

// streamToOpenAI feeds an upstream SSE body through a fresh decoder in one piece and
// returns the OpenAI SSE the gateway would send (include_usage on). A decoder error or an
// EventError ends the output with the in-band error frame, as the proxy does.
func streamToOpenAI(t testing.TB, newDecoder func() StreamDecoder, upstream []byte) []byte {
	t.Helper()
	return streamChunksToOpenAI(t, newDecoder, [][]byte{upstream})
}

func streamChunksToOpenAI(t testing.TB, newDecoder func() StreamDecoder, chunks [][]byte) []byte {
	t.Helper()
	dec := newDecoder()
	enc := NewChunkEncoder(goldenID, goldenModel, goldenCreated, true)
	var out []byte
	var upErr *UpstreamError
	emit := func(ev *Event) error {
		if ev.Kind == EventError {
			upErr = ev.Err
			return ev.Err
		}
		out = enc.Encode(out, ev)
		return nil
	}
	var p sse.Parser
	var err error
	for _, c := range chunks {
		if err = p.Feed(c, func(typ, data []byte) error { return dec.Event(typ, data, emit) }); err != nil {
			break
		}
	}
	if err == nil {
		err = dec.Close(emit)
	}
	if err != nil {
		return appendGoldenError(out, err, upErr)
	}
	return enc.Finish(out)
}

func appendGoldenError(out []byte, err error, upErr *UpstreamError) []byte {
	if upErr == nil {
		errors.As(err, &upErr)
	}
	if upErr != nil {
		return AppendErrorEvent(out, upErr.Message, upErr.Type, upErr.Param, upErr.Code)
	}
	return AppendErrorEvent(out, err.Error(), "api_error", "", "")
}

// checkSplits asserts that the stream decodes to want however it is split: into two reads
// at every byte offset (for long streams: every offset of the first 2 KiB and last 1 KiB,
// every offset within 3 bytes of an event boundary, and every 7th offset elsewhere, which
// keeps the check linear-ish under -race), and byte by byte.
func checkSplits(t *testing.T, newDecoder func() StreamDecoder, upstream, want []byte) {
	t.Helper()
	for _, i := range splitOffsets(upstream) {
		got := streamChunksToOpenAI(t, newDecoder, [][]byte{upstream[:i], upstream[i:]})
		if !bytes.Equal(got, want) {
			t.Fatalf("split at byte %d differs (-want +got):\n%s", i, cmp.Diff(string(want), string(got)))
		}
	}
	var chunks [][]byte
	for i := range upstream {
		chunks = append(chunks, upstream[i:i+1])
	}
	if got := streamChunksToOpenAI(t, newDecoder, chunks); !bytes.Equal(got, want) {
		t.Fatalf("byte by byte differs (-want +got):\n%s", cmp.Diff(string(want), string(got)))
	}
}

func splitOffsets(upstream []byte) []int {
	n := len(upstream)
	var out []int
	if n <= 4096 {
		for i := 1; i < n; i++ {
			out = append(out, i)
		}
		return out
	}
	near := make([]bool, n+1)
	for i := 0; i+1 < n; i++ {
		if upstream[i] == '\n' && (upstream[i+1] == '\n' || upstream[i+1] == '\r') {
			for d := -3; d <= 3; d++ {
				if j := i + d; j > 0 && j < n {
					near[j] = true
				}
			}
		}
	}
	for i := 1; i < n; i++ {
		if i < 2048 || i > n-1024 || near[i] || i%7 == 0 {
			out = append(out, i)
		}
	}
	return out
}

// responseToOpenAI decodes a whole upstream body and returns the chat.completion JSON.
func responseToOpenAI(t testing.TB, p Provider, body []byte) []byte {
	t.Helper()
	var a Assembler
	if err := p.DecodeResponse(body, a.Add); err != nil {
		var ue *UpstreamError
		errors.As(err, &ue)
		return appendGoldenError(nil, err, ue)
	}
	a.Finish()
	return a.AppendCompletion(nil, goldenID, goldenModel, goldenCreated)
}

// golden compares got with section name of the txtar archive at path, or rewrites the
// section under -update. JSON sections are compared after indenting both sides.
func golden(t *testing.T, path, name string, got []byte) {
	t.Helper()
	ar, err := txtar.ParseFile(path)
	if err != nil && !(update() && os.IsNotExist(err)) {
		t.Fatalf("reading golden: %v", err)
	}
	if ar == nil {
		ar = &txtar.Archive{}
	}
	if strings.HasSuffix(name, ".json") {
		var buf bytes.Buffer
		if err := json.Indent(&buf, got, "", "  "); err == nil {
			buf.WriteByte('\n')
			got = buf.Bytes()
		}
	}
	for i := range ar.Files {
		if ar.Files[i].Name != name {
			continue
		}
		if update() {
			ar.Files[i].Data = got
			writeArchive(t, path, ar)
			return
		}
		if diff := cmp.Diff(string(ar.Files[i].Data), string(got)); diff != "" {
			t.Errorf("%s: %s differs from golden (-want +got):\n%s", path, name, diff)
		}
		return
	}
	if !update() {
		t.Fatalf("%s has no section %q (run go test -update)", path, name)
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: got})
	writeArchive(t, path, ar)
}

func writeArchive(t *testing.T, path string, ar *txtar.Archive) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
}

// section returns the named section of a txtar archive, failing the test if absent.
func section(t testing.TB, ar *txtar.Archive, name string) []byte {
	t.Helper()
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	t.Fatalf("no section %q", name)
	return nil
}

// section1 returns the named section of a txtar archive, nil if absent.
func section1(ar *txtar.Archive, name string) []byte {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

// readFixture returns a file of fixturesDir; rel is relative to it
// ("anthropic/stream/text-basic.mirascope.sse").
func readFixture(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixturesDir, rel))
	if err != nil {
		t.Fatalf("reading fixture: %v", err)
	}
	return b
}

// reframeChunks rebuilds an SSE stream from a vercel *.chunks.txt file (one data payload a
// line), as testdata/fixtures/SOURCES.md says: with an event: line of the payload's "type" for
// Anthropic and Responses (typed), data-only with CRLF framing for Gemini.
func reframeChunks(chunks []byte, typed bool) []byte {
	var out []byte
	for _, line := range bytes.Split(chunks, []byte("\n")) {
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if typed {
			var head struct{ Type string }
			_ = json.Unmarshal(line, &head)
			out = append(out, "event: "+head.Type+"\n"...)
			out = append(out, "data: "...)
			out = append(out, line...)
			out = append(out, "\n\n"...)
		} else {
			out = append(out, "data: "...)
			out = append(out, line...)
			out = append(out, "\r\n\r\n"...)
		}
	}
	return out
}

// checkChunkInvariants checks an OpenAI SSE body the translate tests produce (include_usage
// on) against the chunk contract; it tolerates a final in-band error frame.
func checkChunkInvariants(t testing.TB, body []byte) {
	t.Helper()
	openaitest.CheckChunks(t, body, openaitest.Want{ErrorEnd: true})
}

// goldenSection returns section sec of the transcript testdata/<dir>/<name>.txtar.
func goldenSection(t testing.TB, dir, name, sec string) []byte {
	t.Helper()
	ar, err := txtar.ParseFile(filepath.Join("testdata", dir, name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	return section(t, ar, sec)
}

// goldenSeeds returns section sec of every transcript of testdata/<dir> that has one,
// upstream.chunks.txt reframed as SSE when sec is upstream.sse (typed as goldenDialect
// says), each cut to max bytes: fuzz seeds.
func goldenSeeds(dir, sec string, typed bool, max int) [][]byte {
	files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.txtar"))
	var out [][]byte
	for _, f := range files {
		ar, err := txtar.ParseFile(f)
		if err != nil {
			continue
		}
		b := section1(ar, sec)
		if b == nil && sec == "upstream.sse" {
			if c := section1(ar, "upstream.chunks.txt"); c != nil {
				b = reframeChunks(c, typed)
			}
		}
		if b == nil {
			continue
		}
		if max > 0 && len(b) > max {
			b = b[:max]
		}
		out = append(out, b)
	}
	return out
}
