package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/messagesin"
)

// These tests lock issue 45 item 1: the compressed state one request carries (the
// gateway's sealed reasoning blobs in encrypted_content, the state in its tool call ids)
// inflates to at most server.max_inflated_bytes in all (default max_body_bytes, 20 MiB),
// counted while inflating; beyond, the request is a 400 naming the field and nothing goes
// upstream. Each blob and id below is some 7 KB on the wire and inflates to 7 MiB.

// inflatingState is 7 MiB of Anthropic thinking-block state, as a carry id holds it.
func inflatingState(size int) []byte {
	return []byte(`[{"type":"thinking","thinking":"` + strings.Repeat("a", size) + `","signature":"sig"}]`)
}

// inflatingBlob is a sealed block (encrypted_content) of a thinking block of size bytes.
func inflatingBlob(size int) string {
	return translate.SealBlock(&translate.ThinkingBlock{Dialect: "anthropic", Type: "thinking", Thinking: strings.Repeat("a", size), Signature: "sig"})
}

const (
	bigState  = 7 << 20
	anthReply = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
)

func inflateGateway(t *testing.T, server string) (*gateway, *fakeUpstream) {
	t.Helper()
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/count_tokens") {
			w.Write([]byte(`{"input_tokens":3}`))
			return
		}
		w.Write([]byte(anthReply))
	})
	g := startGateway(t, server+`
backends:
  claude: {type: anthropic, base_url: "{{UP}}", api_key: up-secret, retries: {max: 0}}

models:
  m-claude: {backend: claude, upstream_model: claude-x, max_tokens: 64}


keys:
  client: {key: client-key, models: ["*"]}
`, map[string]string{"UP": up.URL})
	return g, up
}

// chatWithCarryIDs is a chat request whose assistant turn has one tool call per id.
func chatWithCarryIDs(ids []string) string {
	var calls, results []string
	for i, id := range ids {
		calls = append(calls, fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":"f","arguments":"{}"}}`, id))
		results = append(results, fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":"r%d"}`, id, i))
	}
	return `{"model":"m-claude","reasoning_effort":"low","messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[` +
		strings.Join(calls, ",") + `]},` + strings.Join(results, ",") + `],"tools":[{"type":"function","function":{"name":"f"}}]}`
}

// carryIDs returns n tool call ids toolu_<i>, each carrying the state of size bytes. The
// state is compressed once (a carry id is its upstream id followed by the carried part,
// which does not depend on the id): compressing 7 MiB takes seconds under -race.
func carryIDs(n, size int) []string {
	carried := strings.TrimPrefix(translate.CarryID("toolu_0", inflatingState(size)), "toolu_0")
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("toolu_%d", i) + carried
	}
	return ids
}

// blobItems returns n reasoning items, each with the sealed block of size bytes (sealed
// once: it is the same for every item).
func blobItems(n, size int) string {
	blob := bigBlob()
	if size != bigState {
		blob = inflatingBlob(size)
	}
	item := fmt.Sprintf(`{"type":"reasoning","summary":[],"encrypted_content":%q}`, blob)
	return strings.TrimSuffix(strings.Repeat(item+",", n), ",")
}

// bigBlob is inflatingBlob(bigState), sealed once for the test binary: sealing 7 MiB
// takes some 0.44 s of CPU under -race, and two tests use it (#54). A sealed block is a
// pure function of the block, so it is the same value each would seal.
var bigBlob = sync.OnceValue(func() string { return inflatingBlob(bigState) })

// TestCarryIDs_AsCarryIDWritesThem: carryIDs' shortcut gives the ids CarryID gives.
func TestCarryIDs_AsCarryIDWritesThem(t *testing.T) {
	for i, id := range carryIDs(3, 1<<10) {
		if want := translate.CarryID(fmt.Sprintf("toolu_%d", i), inflatingState(1<<10)); id != want {
			t.Errorf("carry id %d is %q, CarryID writes %q", i, id, want)
		}
	}
}

// TestCarriedState_BoundedPerRequest: three pieces of 7 MiB state (21 MiB, over the
// default 20 MiB) in a request of some 25 KB are a 400 carried_state_too_large naming the
// third, on every client API, and the upstream sees nothing.
func TestCarriedState_BoundedPerRequest(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	g, up := inflateGateway(t, "")
	ids := carryIDs(3, bigState)
	var calls []string
	for i, id := range ids {
		calls = append(calls, fmt.Sprintf(`{"type":"function_call","call_id":%q,"name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"%d","output":"r"}`, id, i))
	}
	var uses, results []string
	for i, id := range ids {
		uses = append(uses, fmt.Sprintf(`{"type":"tool_use","id":%q,"name":"f","input":{}}`, messagesin.ClientToolID(id)))
		results = append(results, fmt.Sprintf(`{"type":"tool_result","tool_use_id":"x%d","content":"r"}`, i))
	}
	messages := `{"model":"m-claude","max_tokens":64,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[` +
		strings.Join(uses, ",") + `]},{"role":"user","content":[` + strings.Join(results, ",") + `]}],"tools":[{"name":"f","input_schema":{"type":"object"}}]}`
	for _, tt := range []struct {
		name, path, body, param string
	}{
		{"chat tool call ids", "/v1/chat/completions", chatWithCarryIDs(ids), "messages[1].tool_calls[2].id"},
		{"responses encrypted_content", "/v1/responses",
			`{"model":"m-claude","reasoning":{"effort":"low"},"input":[{"role":"user","content":"go"},` + blobItems(3, bigState) + `,{"role":"user","content":"on"}]}`,
			"input[3].encrypted_content"},
		{"responses call ids", "/v1/responses",
			`{"model":"m-claude","input":[{"role":"user","content":"go"},` + strings.Join(calls, ",") + `]}`, "input[5].call_id"},
		{"messages tool_use ids", "/v1/messages", messages, "messages[1].content[2].id"},
		{"count_tokens tool_use ids", "/v1/messages/count_tokens", messages, "messages[1].content[2].id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.body) > 64<<10 {
				t.Fatalf("the request is %d bytes, want a small one", len(tt.body))
			}
			r := g.do("POST", tt.path, "client-key", []byte(tt.body))
			if strings.HasPrefix(tt.path, "/v1/messages") { // Anthropic's error shape: the param leads the message
				got := []string{fmt.Sprint(r.status), gjson.GetBytes(r.body, "error.type").Str}
				if diff := cmp.Diff([]string{"400", "invalid_request_error"}, got); diff != "" || !strings.HasPrefix(gjson.GetBytes(r.body, "error.message").Str, tt.param+":") {
					t.Errorf("answer %s, want a 400 naming %s (-want +got):\n%s", r.body, tt.param, diff)
				}
			} else {
				got := decodeError(t, r)
				got.Message = ""
				if diff := cmp.Diff(errorView{Status: 400, Type: "invalid_request_error", Param: tt.param, Code: "carried_state_too_large"}, got); diff != "" {
					t.Errorf("error (-want +got):\n%s\n%s", diff, r.body)
				}
			}
		})
	}
	if n := len(up.calls()); n != 0 {
		t.Errorf("upstream saw %d requests, want none", n)
	}
}

// TestCarriedState_StoredContinuation: the items a previous_response_id continuation
// takes from the store draw on the same allowance as the request's own. Two 7 MiB blobs
// are served and stored; a continuation adding a third is a 400 naming
// previous_response_id, and nothing more goes upstream.
func TestCarriedState_StoredContinuation(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	g, up := inflateGateway(t, "")
	blob := blobItems(1, bigState)
	first := g.do("POST", "/v1/responses", "client-key", []byte(`{"model":"m-claude","store":true,"input":[{"role":"user","content":"go"},`+blob+","+blob+`,{"role":"user","content":"on"}]}`))
	id := gjson.GetBytes(first.body, "id").Str
	if first.status != 200 || id == "" {
		t.Fatalf("first request: %d %s", first.status, first.body)
	}
	next := g.do("POST", "/v1/responses", "client-key", []byte(`{"model":"m-claude","previous_response_id":"`+id+`","input":[`+blob+`,{"role":"user","content":"more"}]}`))
	got := decodeError(t, next)
	got.Message = ""
	if diff := cmp.Diff(errorView{Status: 400, Type: "invalid_request_error", Param: "previous_response_id", Code: "carried_state_too_large"}, got); diff != "" {
		t.Errorf("continuation (-want +got):\n%s\n%s", diff, next.body)
	}
	if n := len(up.calls()); n != 1 {
		t.Errorf("upstream saw %d requests, want the first only", n)
	}
}

// TestCarriedState_Configured: server.max_inflated_bytes sets the bound; within it the
// state reaches the upstream (the thinking blocks restored in front of the tool calls).
func TestCarriedState_Configured(t *testing.T) {
	g, up := inflateGateway(t, "server: {max_inflated_bytes: 1048576}\n")
	r := g.chat("client-key", chatWithCarryIDs(carryIDs(2, 400<<10)))
	if r.status != 200 {
		t.Fatalf("two 400 KiB states under a 1 MiB bound: %d %s", r.status, r.body)
	}
	calls := up.calls()
	if len(calls) != 1 || len(calls[0].Body) < 800<<10 {
		t.Fatalf("upstream calls %d, want one carrying both states", len(calls))
	}
	got := decodeError(t, g.chat("client-key", chatWithCarryIDs(carryIDs(2, 600<<10))))
	got.Message = ""
	if diff := cmp.Diff(errorView{Status: 400, Type: "invalid_request_error", Param: "messages[1].tool_calls[1].id", Code: "carried_state_too_large"}, got); diff != "" {
		t.Errorf("two 600 KiB states (-want +got):\n%s", diff)
	}
	if n := len(up.calls()); n != 1 {
		t.Errorf("upstream saw %d requests, want 1", n)
	}
}
