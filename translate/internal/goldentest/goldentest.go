// Package goldentest runs the golden transcripts of the upstream dialects (Run) and holds
// the helpers their tests share: an upstream stream or body through a decoder to the
// OpenAI chat output, every split of a stream, the chunk contract, txtar sections. It is
// for tests only (it imports testing); it imports translate, the openaichat client
// dialect (the OpenAI side of every golden) and internal test helpers, never an upstream
// dialect.
package goldentest

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/internal/openaitest"
	"github.com/agate-gateway/agate/internal/splittest"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/openaichat"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/agate-gateway/agate/internal/sse"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testdata/*.txtar")

// Updating reports whether the test runs with -update (goldentest defines the flag: a test
// package that imports goldentest asks it rather than defining its own).
func Updating() bool { return *update }

// Fixed values the Golden outputs are encoded with.
const (
	ID      = "chatcmpl-golden"
	Model   = "client-model"
	Created = 1700000000
)

// fixturesDir is the repository's testdata/fixtures (recorded provider traffic, with its
// provenance in SOURCES.md), found from the module root.
func fixturesDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return filepath.Join("testdata", "fixtures")
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "testdata", "fixtures")
		}
		if filepath.Dir(d) == d {
			return filepath.Join("testdata", "fixtures")
		}
	}
}

// Stream feeds an upstream SSE body through a fresh decoder in one piece and
// returns the OpenAI SSE the gateway would send (include_usage on). A decoder error or an
// EventError ends the output with the in-band error frame, as the proxy does.
func Stream(t testing.TB, newDecoder func() translate.StreamDecoder, upstream []byte) []byte {
	t.Helper()
	return StreamChunks(t, newDecoder, [][]byte{upstream})
}

// StreamChunks is Stream with the upstream body delivered in the given reads.
func StreamChunks(t testing.TB, newDecoder func() translate.StreamDecoder, chunks [][]byte) []byte {
	t.Helper()
	return streamChunks(newDecoder, chunks, nil)
}

// streamChunks is StreamChunks with the parser's handler wrapped by wrap
// (splittest.Poison), if not nil.
func streamChunks(newDecoder func() translate.StreamDecoder, chunks [][]byte, wrap func(sse.Handler) sse.Handler) []byte {
	dec := newDecoder()
	o := newOutput()
	var p sse.Parser
	var fn sse.Handler = func(typ, data []byte) error { return dec.Event(typ, data, o.emit) }
	if wrap != nil {
		fn = wrap(fn)
	}
	var err error
	for _, c := range chunks {
		if err = p.Feed(c, fn); err != nil {
			break
		}
	}
	if err == nil {
		err = dec.Close(o.emit)
	}
	return o.end(err)
}

// output is the OpenAI SSE a decoder's events become (include_usage on), as the proxy
// writes it: an error ends it with the in-band error frame.
type output struct {
	enc   *openaichat.ChunkEncoder
	out   []byte
	upErr *translate.UpstreamError
}

func newOutput() *output {
	return &output{enc: openaichat.NewChunkEncoder(ID, Model, Created, true)}
}

func (o *output) emit(ev *translate.Event) error {
	if ev.Kind == translate.EventError {
		o.upErr = ev.Err
		return ev.Err
	}
	o.out = o.enc.Encode(o.out, ev)
	return nil
}

// end finishes the output after the stream ended with err.
func (o *output) end(err error) []byte {
	if err != nil {
		return appendError(o.out, err, o.upErr)
	}
	return o.enc.Finish(o.out)
}

func appendError(out []byte, err error, upErr *translate.UpstreamError) []byte {
	if upErr == nil {
		errors.As(err, &upErr)
	}
	if upErr != nil {
		return openaichat.AppendErrorEvent(out, upErr.Message, upErr.Type, upErr.Param, upErr.Code)
	}
	return openaichat.AppendErrorEvent(out, err.Error(), "api_error", "", "")
}

// CheckSplits asserts that the stream decodes to want however it is split: into two reads
// at every byte offset (for long streams: every offset of the first 2 KiB and last 1 KiB,
// every offset within 3 bytes of an event boundary, and every 7th offset elsewhere), and
// byte by byte. The two-read splits are checked as package splittest says: the parser's
// events at every offset (CheckEventSplits), the decoder once with each event's memory
// poisoned after its call (Poison), and SampleOffsets decoded in full; byte by byte is
// decoded in full.
func CheckSplits(t *testing.T, newDecoder func() translate.StreamDecoder, upstream, want []byte) {
	t.Helper()
	CheckSplitsAt(t, newDecoder, upstream, want, splitOffsets(upstream))
}

// CheckSplitsAt is CheckSplits with the two-read splits at the given offsets.
func CheckSplitsAt(t *testing.T, newDecoder func() translate.StreamDecoder, upstream, want []byte, offsets []int) {
	t.Helper()
	if got := streamChunks(newDecoder, [][]byte{upstream}, splittest.Poison); !bytes.Equal(got, want) {
		t.Fatalf("with each event's memory overwritten after its call, the output differs: the decoder keeps a view of an event (-want +got):\n%s", cmp.Diff(string(want), string(got)))
	}
	splittest.CheckEventSplits(t, upstream, offsets)
	for _, i := range splittest.SampleOffsets(len(upstream), 8) {
		got := StreamChunks(t, newDecoder, [][]byte{upstream[:i], upstream[i:]})
		if !bytes.Equal(got, want) {
			t.Fatalf("split at byte %d differs (-want +got):\n%s", i, cmp.Diff(string(want), string(got)))
		}
	}
	var chunks [][]byte
	for i := range upstream {
		chunks = append(chunks, upstream[i:i+1])
	}
	if got := StreamChunks(t, newDecoder, chunks); !bytes.Equal(got, want) {
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

// Response decodes a whole upstream body and returns the chat.completion JSON.
func Response(t testing.TB, p translate.Provider, body []byte) []byte {
	t.Helper()
	var a openaichat.Assembler
	if err := p.DecodeResponse(body, a.Add); err != nil {
		var ue *translate.UpstreamError
		errors.As(err, &ue)
		return appendError(nil, err, ue)
	}
	a.Finish()
	return a.AppendCompletion(nil, ID, Model, Created)
}

// Golden compares got with section name of the txtar archive at path, or rewrites the
// section under -update. JSON sections are compared after indenting both sides.
func Golden(t *testing.T, path, name string, got []byte) {
	t.Helper()
	ar, err := txtar.ParseFile(path)
	if err != nil && !(*update && os.IsNotExist(err)) {
		t.Fatalf("reading Golden: %v", err)
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
		if *update {
			ar.Files[i].Data = got
			writeArchive(t, path, ar)
			return
		}
		if diff := cmp.Diff(string(ar.Files[i].Data), string(got)); diff != "" {
			t.Errorf("%s: %s differs from Golden (-want +got):\n%s", path, name, diff)
		}
		return
	}
	if !*update {
		t.Fatalf("%s has no Section %q (run go test -update)", path, name)
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

// Section returns the named section of a txtar archive, failing the test if absent.
func Section(t testing.TB, ar *txtar.Archive, name string) []byte {
	t.Helper()
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	t.Fatalf("no Section %q", name)
	return nil
}

// Lookup returns the named section of a txtar archive, nil if absent.
func Lookup(ar *txtar.Archive, name string) []byte {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

// ReadFixture returns a file of fixturesDir; rel is relative to it
// ("anthropic/stream/text-basic.mirascope.sse").
func ReadFixture(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixturesDir(), rel))
	if err != nil {
		t.Fatalf("reading fixture: %v", err)
	}
	return b
}

// ReframeChunks rebuilds an SSE stream from a vercel *.chunks.txt file (one data payload a
// line), as testdata/fixtures/SOURCES.md says: with an event: line of the payload's "type" for
// Anthropic and Responses (typed), data-only with CRLF framing for Gemini.
func ReframeChunks(chunks []byte, typed bool) []byte {
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

// CheckChunks checks an OpenAI SSE body the translate tests produce (include_usage
// on) against the chunk contract; it tolerates a final in-band error frame.
func CheckChunks(t testing.TB, body []byte) {
	t.Helper()
	openaitest.CheckChunks(t, body, openaitest.Want{ErrorEnd: true})
}

// Dialect is one upstream dialect whose transcripts live in testdata/<dir>: every
// *.txtar there is a golden case, so adding a recording is adding a file. The sections
// say what the case is:
//
//   - request.json (+ options.json): the OpenAI request and the route Options (and
//     tool_errors, the indexes of the tool messages to flag as failed calls, as the tool
//     loop flags a failed server tool); want.json is the upstream body, dropped.txt the
//     parameters dropped (one a line), and the body must satisfy the dialect's published
//     schema.
//   - upstream.sse, or upstream.chunks.txt (one data payload a line, reframed): a stream;
//     want.sse is the OpenAI SSE the client gets. It must keep the chunk contract and
//     decode the same however the bytes are split.
//   - upstream.json: a whole response, want.json the chat.completion; with a "status: N"
//     line (N >= 400) in the comment, an error body, want.json the client's error.
type Dialect struct {
	Provider   translate.Provider
	NewDecoder func() translate.StreamDecoder
	// Typed: reframed chunks get an event: line (Anthropic, Responses).
	Typed bool
	// Splits checks a stream's splits; nil is CheckSplits.
	Splits func(t *testing.T, upstream, want []byte)
	// Schema returns the check of an upstream request body against the published spec (a spectest request check).
	Schema func(t testing.TB) func(body []byte) error
	// ArrayStream, when set, turns an upstream.json that is a JSON array into the SSE
	// stream it is the chunks of (Gemini's streamGenerateContent without alt=sse), which
	// is then checked as a stream too.
	ArrayStream func(t testing.TB, body []byte) []byte
	// Dir is the directory of the transcripts; "" is testdata. A platform's variant of a
	// dialect (Claude on Vertex AI) keeps its own in a subdirectory.
	Dir string
}

// goldenOptions is the options.json section: the Options a request case is encoded with.
// Without upstream_model the request's model is the upstream's.
type goldenOptions struct {
	UpstreamModel    string `json:"upstream_model,omitempty"`
	Stream           bool   `json:"stream,omitempty"`
	DefaultMaxTokens int    `json:"default_max_tokens,omitempty"`
	PromptCache      bool   `json:"prompt_cache,omitempty"`
	DropUnsupported  bool   `json:"drop_unsupported,omitempty"`
	Store            bool   `json:"store,omitempty"`
	// ToolErrors are indexes of tool messages to mark ToolError.
	ToolErrors []int `json:"tool_errors,omitempty"`
}

var statusLine = regexp.MustCompile(`(?m)^status: (\d+)$`)

// Run runs every transcript in testdata/*.txtar (Dialect.Dir) as Dialect says: adding a
// recording is adding a file.
func Run(t *testing.T, d Dialect) {
	dir := d.Dir
	if dir == "" {
		dir = "testdata"
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in %s (%v)", dir, err)
	}
	var validate func([]byte) error
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if req := Lookup(ar, "request.json"); req != nil {
				if validate == nil && d.Schema != nil { // nil: no published schema
					validate = d.Schema(t)
				}
				request(t, d, path, ar, req, validate)
				return
			}
			d.run(t, path, ar)
		})
	}
}

func (d Dialect) run(t *testing.T, path string, ar *txtar.Archive) {
	status := 0
	if m := statusLine.FindSubmatch(ar.Comment); m != nil {
		status, _ = strconv.Atoi(string(m[1]))
	}
	ran := false
	for _, f := range ar.Files {
		switch f.Name {
		case "upstream.sse":
			d.stream(t, path, f.Data)
		case "upstream.chunks.txt":
			d.stream(t, path, ReframeChunks(f.Data, d.Typed))
		case "upstream.eventstream.txt":
			d.eventStream(t, path, EncodeEvents(t, f.Data))
		case "upstream.eventstream.b64":
			d.eventStream(t, path, decodeBase64(t, f.Data))
		case "upstream.json":
			if status >= 400 {
				Golden(t, path, "want.json", ErrorJSON(d.Provider.DecodeError(status, f.Data)))
				break
			}
			Golden(t, path, "want.json", Response(t, d.Provider, f.Data))
			if d.ArrayStream != nil && bytes.HasPrefix(bytes.TrimSpace(f.Data), []byte("[")) {
				d.stream(t, path, d.ArrayStream(t, f.Data))
			}
		default:
			continue
		}
		ran = true
	}
	if !ran {
		t.Fatalf("%s has no request.json, upstream.sse, upstream.chunks.txt or upstream.json", path)
	}
}

func (d Dialect) stream(t *testing.T, path string, upstream []byte) {
	t.Helper()
	got := Stream(t, d.NewDecoder, upstream)
	Golden(t, path, "want.sse", got)
	CheckChunks(t, got)
	if d.Splits != nil {
		d.Splits(t, upstream, got)
	} else {
		CheckSplits(t, d.NewDecoder, upstream, got)
	}
}

func request(t *testing.T, d Dialect, path string, ar *txtar.Archive, body []byte, validate func([]byte) error) {
	var o goldenOptions
	if raw := Lookup(ar, "options.json"); raw != nil {
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatalf("options.json: %v", err)
		}
	}
	req, err := openaichat.ParseRequest(body)
	if err != nil {
		t.Fatalf("ParseRequest: %v", err)
	}
	if len(o.ToolErrors) > 0 {
		req = req.Clone() // as the tool loop does before appending results
		for _, i := range o.ToolErrors {
			if i < 0 || i >= len(req.Messages) || req.Messages[i].Role != translate.RoleTool {
				t.Fatalf("options.json: tool_errors names message %d, which is not a tool message", i)
			}
			req.Messages[i].ToolError = true
		}
	}
	opts := translate.Options{UpstreamModel: o.UpstreamModel, Stream: o.Stream, DefaultMaxTokens: o.DefaultMaxTokens,
		PromptCache: o.PromptCache, DropUnsupported: o.DropUnsupported, Store: o.Store}
	if opts.UpstreamModel == "" {
		opts.UpstreamModel = req.Model
	}
	var dropped []byte
	opts.Dropped = func(p string) { dropped = append(append(dropped, p...), '\n') }
	got, err := d.Provider.AppendRequest(nil, req, &opts)
	if err != nil {
		t.Fatalf("AppendRequest: %v", err)
	}
	Golden(t, path, "want.json", got)
	if _, ok := d.Provider.(translate.LiteralReader); ok {
		// Such an encoder is given the request as the lazy parse leaves it (strings
		// escaped as written): it must write the very same bytes.
		lazy, err := openaichat.ParseRequestLazy(body)
		if err != nil {
			t.Fatalf("ParseRequestLazy: %v", err)
		}
		if len(o.ToolErrors) > 0 {
			lazy = lazy.Clone()
			for _, i := range o.ToolErrors {
				lazy.Messages[i].ToolError = true
			}
		}
		lopts := opts
		lopts.Dropped = func(string) {}
		fromLiterals, err := d.Provider.AppendRequest(nil, lazy, &lopts)
		if err != nil || string(fromLiterals) != string(got) {
			t.Errorf("from the lazily parsed request (a LiteralReader) the encoder wrote\n%s (err %v)\nnot\n%s", fromLiterals, err, got)
		}
	}
	if dropped != nil || Lookup(ar, "dropped.txt") != nil {
		Golden(t, path, "dropped.txt", dropped)
	}
	if validate == nil {
		return
	}
	if err := validate(got); err != nil {
		t.Errorf("the upstream body does not satisfy the dialect's spec: %v\n%s", err, got)
	}
}

// ErrorJSON renders a decoded upstream error with its status and retry facts.
func ErrorJSON(e *translate.UpstreamError) []byte {
	b := []byte(`{"status":`)
	b = jsonx.AppendInt(b, e.Status)
	b = append(b, `,"retryable":`...)
	b = jsonx.AppendBool(b, e.Retryable)
	b = append(b, `,"retry_after":`...)
	b = jsonx.AppendString(b, e.RetryAfter.String())
	b = append(b, `,"body":`...)
	b = openaichat.AppendError(b, e.Message, e.Type, e.Param, e.Code)
	return append(b, '}')
}

// Transcript returns section sec of the transcript testdata/<name>.txtar.
func Transcript(t testing.TB, name, sec string) []byte {
	t.Helper()
	ar, err := txtar.ParseFile(filepath.Join("testdata", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	return Section(t, ar, sec)
}

// Seeds returns section sec of every transcript in testdata that has one,
// upstream.chunks.txt reframed as SSE when sec is upstream.sse (typed as Dialect says),
// each cut to max bytes: fuzz seeds.
func Seeds(sec string, typed bool, max int) [][]byte {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	var out [][]byte
	for _, f := range files {
		ar, err := txtar.ParseFile(f)
		if err != nil {
			continue
		}
		b := Lookup(ar, sec)
		if b == nil && sec == "upstream.sse" {
			if c := Lookup(ar, "upstream.chunks.txt"); c != nil {
				b = ReframeChunks(c, typed)
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

// RequestSeeds returns the chat request bodies recorded from the real APIs (the
// repository's testdata/fixtures/*/*/*.request.json and proxy/testdata/openai-chat), as
// fuzz seeds.
func RequestSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	root := filepath.Dir(fixturesDir())
	root = filepath.Dir(root)
	var out [][]byte
	for _, pattern := range []string{
		filepath.Join(root, "testdata", "fixtures", "*", "*", "*.request.json"),
		filepath.Join(root, "proxy", "testdata", "openai-chat", "*", "*.request.json"),
	} {
		files, _ := filepath.Glob(pattern)
		if len(files) == 0 {
			tb.Fatalf("no fuzz seeds match %s", pattern)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

// SameFromLiterals fails t unless p, a translate.LiteralReader, encodes body as the lazy
// parse leaves it (strings still escaped) into the same bytes, or the same error, as
// out and err, its encoding of the strict parse's request with opts.
func SameFromLiterals(t testing.TB, p translate.Provider, body []byte, opts *translate.Options, out []byte, err error) {
	t.Helper()
	lazy, lerr := openaichat.ParseRequestLazy(body)
	if lerr != nil {
		t.Fatalf("ParseRequest accepted what ParseRequestLazy rejects: %v", lerr)
	}
	lout, lerr := p.AppendRequest(nil, lazy, opts)
	if string(lout) != string(out) || (lerr == nil) != (err == nil) || (err != nil && lerr.Error() != err.Error()) {
		t.Fatalf("lazy request encodes as\n%s (%v)\nstrict as\n%s (%v)", lout, lerr, out, err)
	}
}
