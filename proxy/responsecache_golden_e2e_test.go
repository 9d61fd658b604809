package proxy_test

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/internal/openaitest"
	"github.com/agate-gateway/agate/proxy"
)

var updateCacheGolden = flag.Bool("update-cache-golden", false, "rewrite proxy/testdata/responsecache/*.golden")

// volatile are the parts of a stream that differ between two answers of the same
// entry: response and message ids and creation times.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"id":"(chatcmpl|resp|msg)[-_][0-9a-zA-Z]+"`), `"id":"$1-ID"`},
	{regexp.MustCompile(`"(item_id|response_id)":"[^"]+"`), `"$1":"ID"`},
	{regexp.MustCompile(`"id":"(msg|rs|fc)_[0-9a-zA-Z_]+"`), `"id":"${1}_ID"`},
	{regexp.MustCompile(`"(created|created_at|completed_at)":[0-9]+`), `"$1":0`},
}

func normalise(b []byte) []byte {
	for _, v := range volatile {
		b = v.re.ReplaceAll(b, []byte(v.with))
	}
	return b
}

// TestResponseCache_StreamReplayGolden: a stream answered from the cache is the stream
// the miss gave, byte for byte but for its ids and creation times (new ones), in each
// client API: chat completions (stored and replayed through chat), and Messages and
// Responses replaying an entry stored through chat (compared with their own answer from
// the upstream, asked with x-agate-cache: skip). The replay is also held to the chunk
// and Responses event contracts (openaitest) and kept in testdata/responsecache.
func TestResponseCache_StreamReplayGolden(t *testing.T) {
	up := gatewaytest.NewFakeJSON(t, "openai")
	same := gatewaytest.Turn{Text: "Hello there"} // every answer the same: a miss and a hit compare
	up.SetScript(same, same, same, same, same)
	g := gatewaytest.StartYAML(t, fmt.Sprintf(cacheYAML, up.BaseURL(), "{}"), gatewaytest.Options{Runtime: proxy.TestRuntime})
	post := func(path, body string, header ...string) ([]byte, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", g.URL+path, strings.NewReader(body))
		if len(header) == 2 {
			req.Header.Set(header[0], header[1])
		}
		req.Header.Set("Authorization", "Bearer alice-key")
		req.Header.Set("x-api-key", "alice-key")
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return b, resp.Header.Get("x-agate-cache")
	}
	chat := func(prompt string) string {
		return `{"model":"m","stream":true,"stream_options":{"include_usage":true},"temperature":0,"max_tokens":50,"messages":[{"role":"user","content":"` + prompt + `"}]}`
	}
	tests := []struct {
		name, golden string
		store        string // the chat request that stores the entry
		path, body   string // the streamed request that replays it
	}{
		{name: "chat", golden: "chat-stream.golden", store: chat("one"), path: "/v1/chat/completions", body: chat("one")},
		{name: "messages", golden: "messages-stream.golden", store: chat("two"), path: "/v1/messages",
			body: `{"model":"m","stream":true,"temperature":0,"max_tokens":50,"messages":[{"role":"user","content":"two"}]}`},
		{name: "responses", golden: "responses-stream.golden", store: chat("three"), path: "/v1/responses",
			body: `{"model":"m","stream":true,"temperature":0,"max_output_tokens":50,"input":"three"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			miss, c1 := post("/v1/chat/completions", tt.store)
			first := miss
			if tt.path != "/v1/chat/completions" { // the API's own answer from the upstream
				first, _ = post(tt.path, tt.body, "x-agate-cache", "skip")
			}
			hit, c2 := post(tt.path, tt.body)
			again, c3 := post(tt.path, tt.body)
			if c1 != "miss" || c2 != "hit" || c3 != "hit" {
				t.Fatalf("x-agate-cache %q, %q, %q; want miss, hit, hit", c1, c2, c3)
			}
			if bytes.Equal(hit, again) {
				t.Errorf("two replays are the same bytes: no new ids or times")
			}
			if !bytes.Equal(normalise(hit), normalise(again)) {
				t.Errorf("two replays differ beyond ids and times:\n%s\n%s", hit, again)
			}
			if first != nil && !bytes.Equal(normalise(first), normalise(hit)) {
				t.Errorf("the replay differs from the miss beyond ids and times:\nmiss:\n%s\nhit:\n%s", first, hit)
			}
			switch tt.path {
			case "/v1/chat/completions":
				openaitest.CheckChunks(t, hit, openaitest.Want{Model: "m"})
			case "/v1/responses":
				openaitest.CheckResponseEvents(t, hit)
			}
			path := filepath.Join("testdata", "responsecache", tt.golden)
			if os.Getenv("CACHE_DEBUG") != "" {
				t.Logf("%s", hit)
			}
			got := normalise(hit)
			if *updateCacheGolden {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update-cache-golden)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("replay differs from %s:\n%s", path, got)
			}
		})
	}
	if n := len(up.Bodies()); n != 5 {
		t.Errorf("upstream calls %d, want 5 (3 stored, 2 skipped)", n)
	}
}
