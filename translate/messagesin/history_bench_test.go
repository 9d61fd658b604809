package messagesin_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/messagesin"
	"github.com/agate-gateway/agate/translate/openai"
)

// historyBodies are scenario d's agentic histories at 10 and 100 KB (testdata/SOURCES.md).
func historyBodies(b *testing.B) map[int][]byte {
	out := map[int][]byte{}
	for _, kb := range []int{10, 100} {
		body, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("history-%dk.json", kb)))
		if err != nil {
			b.Fatal(err)
		}
		out[kb] = body
	}
	return out
}

// parses are the parses a history is read with: ParseOwned, and ParseLazy, the proxy's.
var parses = []struct {
	name  string
	parse func([]byte, int) (*translate.Request, error)
}{{"parse", messagesin.ParseOwned}, {"parse-lazy", messagesin.ParseLazy}}

// BenchmarkParseHistory parses scenario d's history at 10 and 100 KB, eagerly, lazily
// (ParseLazy) and as the passthrough does (ParseHead: the first pass only), and forwards it (AppendPassBody, and the splice ParsePass's
// PassBody makes): the passthrough's whole request-side cost.
func BenchmarkParseHistory(b *testing.B) {
	for _, kb := range []int{10, 100} {
		body := historyBodies(b)[kb]
		for _, p := range parses {
			b.Run(fmt.Sprintf("%dKB/%s", kb, p.name), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.parse(body, 1<<20); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("%dKB/head", kb), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, complete, err := messagesin.ParseHead(body, 1<<20, nil); err != nil || complete {
					b.Fatal(err, complete)
				}
			}
		})
		// As the translated path reads it: the first pass gives up at the model, which
		// anthropic-sdk-python writes after the messages (its members sorted, as
		// ../shared/bench writes them too), and the full parse reads the body.
		sorted := sortedMembers(b, body)
		b.Run(fmt.Sprintf("%dKB/head-sorted", kb), func(b *testing.B) {
			b.SetBytes(int64(len(sorted)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, complete, err := messagesin.ParseHead(sorted, 1<<20, func(string) bool { return true }); err != nil || complete {
					b.Fatal(err, complete)
				}
			}
		})
		b.Run(fmt.Sprintf("%dKB/head-translated-sorted", kb), func(b *testing.B) {
			b.SetBytes(int64(len(sorted)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, complete, err := messagesin.ParseHead(sorted, 1<<20, func(string) bool { return false }); err != nil || !complete {
					b.Fatal(err, complete)
				}
			}
		})
		_, pass, err := messagesin.ParsePass(body, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		for _, w := range []struct {
			name   string
			append func(dst, body []byte, model string) []byte
		}{{"passbody", messagesin.AppendPassBody}, {"passbody-spliced", pass.Append}} {
			b.Run(fmt.Sprintf("%dKB/%s", kb, w.name), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				dst := make([]byte, 0, len(body)+64)
				for b.Loop() {
					dst = w.append(dst[:0], body, "claude-up")
				}
			})
		}
	}
}

// BenchmarkTranslateHistory encodes scenario d's history, parsed once (eagerly, and
// lazily: "-lazy"), for the upstream dialects a Messages request is translated to: OpenAI
// chat (the bench's product-messages-oai row) and Anthropic (the tool loop's and a mixed
// route's).
func BenchmarkTranslateHistory(b *testing.B) {
	for _, kb := range []int{10, 100} {
		body := historyBodies(b)[kb]
		for _, p := range parses {
			req, err := p.parse(body, 1<<20)
			if err != nil {
				b.Fatal(err)
			}
			suffix := p.name[len("parse"):]
			for _, up := range []struct {
				name string
				p    translate.Provider
			}{{"chat", openai.New()}, {"anthropic", anthropic.New()}} {
				b.Run(fmt.Sprintf("%dKB/%s%s", kb, up.name, suffix), func(b *testing.B) {
					b.SetBytes(int64(len(body)))
					b.ReportAllocs()
					opts := &translate.Options{UpstreamModel: "up-model"}
					dst := make([]byte, 0, 2*len(body))
					for b.Loop() {
						if dst, err = up.p.AppendRequest(dst[:0], req, opts); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkParseClaudeCode is BenchmarkParseHistory's parses for Claude Code's recorded
// request (testdata/claude-code-2.1.330.request.json): a short conversation and its tools.
func BenchmarkParseClaudeCode(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("testdata", "claude-code-2.1.330.request.json"))
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range append(parses[:len(parses):len(parses)], struct {
		name  string
		parse func([]byte, int) (*translate.Request, error)
	}{"head", func(body []byte, n int) (*translate.Request, error) {
		req, _, _, err := messagesin.ParseHead(body, n, nil)
		return req, err
	}}) {
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.parse(body, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// sortedMembers is body with every object's members in sorted order, as encoding/json
// writes a map (and SDKs that sort their parameters, openai-python, anthropic-sdk-python).
func sortedMembers(b *testing.B, body []byte) []byte {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		b.Fatal(err)
	}
	sorted, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return sorted
}
