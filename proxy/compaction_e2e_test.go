package proxy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
)

// TestCompactionUsage_EveryClientAPI: an Anthropic answer with usage.iterations
// (server-side compaction) is counted and shown as the sum over its iterations for a chat
// client and for a Messages client on the translated path (a key with server tools) and
// on the passthrough alike: the same tokens in gateway_tokens_total, and the same totals
// in what the client reads. The upstream is the recorded web search stream with the
// iterations of the compaction beta's published usage schema on its message_delta (see
// translate.TestCompactionUsage_EveryClientAPI).
func TestCompactionUsage_EveryClientAPI(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	const usage = `{"input_tokens":2,"cache_creation_input_tokens":559,"cache_read_input_tokens":2615,"output_tokens":97,"iterations":[` +
		`{"type":"compaction","input_tokens":48,"cache_read_input_tokens":2615,"cache_creation_input_tokens":50090,"output_tokens":496},` +
		`{"type":"message","input_tokens":2,"cache_read_input_tokens":2615,"cache_creation_input_tokens":559,"output_tokens":97}]}`
	var lines []string
	for _, line := range strings.Split(string(anthropicFixture(t, "web-search-cache-read-create.mirascope.sse")), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && gjson.Get(d, "type").String() == "message_delta" {
			u := gjson.Get(d, "usage")
			line = "data: " + d[:u.Index] + usage + d[u.Index+len(u.Raw):]
		}
		lines = append(lines, line)
	}
	upstream := []byte(strings.Join(lines, "\n"))
	const prompt, completion = 48 + 2615 + 50090 + 2 + 2615 + 559, 496 + 97
	for _, tt := range []struct {
		name  string
		tools string
		send  func(g *gateway) (prompt, completion int64)
	}{
		{"chat, translated", "", func(g *gateway) (int64, int64) {
			r := g.chat("client-key", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"ETH?"}]}`)
			var u gjson.Result
			for _, d := range sseLines(r.body) {
				if x := gjson.Get(d, "usage"); x.Exists() && x.Type != gjson.Null {
					u = x
				}
			}
			return u.Get("prompt_tokens").Int(), u.Get("completion_tokens").Int()
		}},
		{"messages, translated (server tools)", "tools: [clock]", messagesUsage},
		{"messages, passthrough", "", messagesUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, replaySSE(upstream))
			g := startGatewayWith(t, `
backends:
  claude: {type: anthropic, base_url: "{{UP}}", api_key: up-secret, retries: {max: 0}}
models:
  m: {backend: claude, upstream_model: claude-x}
keys:
  agent: {key: client-key, models: ["*"], `+tt.tools+`}
tools:
  clock: {type: builtin, name: time_now}
`, map[string]string{"UP": up.URL}, gatewayOptions{tools: clockTools{}})
			p, c := tt.send(g)
			counted := [2]float64{g.metricValue("gateway_tokens_total", map[string]string{"type": "prompt"}),
				g.metricValue("gateway_tokens_total", map[string]string{"type": "completion"})}
			if diff := cmp.Diff([2]int64{prompt, completion}, [2]int64{p, c}); tt.name != "messages, passthrough" && diff != "" {
				t.Errorf("the client's usage (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([2]float64{prompt, completion}, counted); diff != "" {
				t.Errorf("tokens counted (-want +got):\n%s", diff)
			}
		})
	}
}

// messagesUsage sends a streamed Messages request and returns the input (cache reads and
// writes included) and output tokens of its final message_delta.
func messagesUsage(g *gateway) (int64, int64) {
	r := g.messages(`{"model":"m","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"ETH?"}]}`)
	var u gjson.Result
	for _, d := range sseLines(r.body) {
		if gjson.Get(d, "type").String() == "message_delta" {
			u = gjson.Get(d, "usage")
		}
	}
	return u.Get("input_tokens").Int() + u.Get("cache_read_input_tokens").Int() + u.Get("cache_creation_input_tokens").Int(), u.Get("output_tokens").Int()
}

func sseLines(body []byte) []string {
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}
