package proxy

import (
	"fmt"
	"net/http"
	"strings"
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
// upstream. A blob or id of bigState is some 7 KB on the wire and inflates to 7 MiB; one
// of smallState some 400 bytes, inflating to 400 KiB.

// inflatingState is Anthropic thinking-block state of some size bytes, as a carry id
// holds it.
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
	item := fmt.Sprintf(`{"type":"reasoning","summary":[],"encrypted_content":%q}`, inflatingBlob(size))
	return strings.TrimSuffix(strings.Repeat(item+",", n), ",")
}

// smallBound is a gateway's server section bounding carried state at 1 MiB, and
// smallState a piece of state of which two fit within it and three do not, as two pieces
// of bigState fit within the default 20 MiB and three do not. The tests prove the bound's
// workings on every client API at this size: under -race, inflating 21 MiB for each case
// cost about a second of CPU, most of it the page faults of the race detector's shadow of
// the buffers (#54). One case keeps the default bound and bigState.
const (
	smallBound = "server: {max_inflated_bytes: 1048576}\n"
	smallState = 400 << 10
)

// TestCarryIDs_AsCarryIDWritesThem: carryIDs' shortcut gives the ids CarryID gives.
func TestCarryIDs_AsCarryIDWritesThem(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for i, id := range carryIDs(3, 1<<10) {
		if want := translate.CarryID(fmt.Sprintf("toolu_%d", i), inflatingState(1<<10)); id != want {
			t.Errorf("carry id %d is %q, CarryID writes %q", i, id, want)
		}
	}
}

// carriedStateCase is a request on a client API carrying three pieces of state of size
// bytes (in tool call ids, encrypted_content, call ids, tool_use ids), and the field
// naming the third. The body is made by the case: building a request seals or compresses
// its state, seconds of CPU under -race at 7 MiB.
type carriedStateCase struct {
	name, path string
	body       func(size int) string
	param      string
}

// carriedMessages is a Messages request whose assistant turn has a tool_use per id.
func carriedMessages(ids []string) string {
	var uses, results []string
	for i, id := range ids {
		uses = append(uses, fmt.Sprintf(`{"type":"tool_use","id":%q,"name":"f","input":{}}`, messagesin.ClientToolID(id)))
		results = append(results, fmt.Sprintf(`{"type":"tool_result","tool_use_id":"x%d","content":"r"}`, i))
	}
	return `{"model":"m-claude","max_tokens":64,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[` +
		strings.Join(uses, ",") + `]},{"role":"user","content":[` + strings.Join(results, ",") + `]}],"tools":[{"name":"f","input_schema":{"type":"object"}}]}`
}

// carriedStateCases returns a case for each client API, chat first.
func carriedStateCases() []carriedStateCase {
	return []carriedStateCase{
		{"chat tool call ids", "/v1/chat/completions", func(size int) string { return chatWithCarryIDs(carryIDs(3, size)) }, "messages[1].tool_calls[2].id"},
		{"responses encrypted_content", "/v1/responses", func(size int) string {
			return `{"model":"m-claude","reasoning":{"effort":"low"},"input":[{"role":"user","content":"go"},` + blobItems(3, size) + `,{"role":"user","content":"on"}]}`
		}, "input[3].encrypted_content"},
		{"responses call ids", "/v1/responses", func(size int) string {
			var calls []string
			for i, id := range carryIDs(3, size) {
				calls = append(calls, fmt.Sprintf(`{"type":"function_call","call_id":%q,"name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"%d","output":"r"}`, id, i))
			}
			return `{"model":"m-claude","input":[{"role":"user","content":"go"},` + strings.Join(calls, ",") + `]}`
		}, "input[5].call_id"},
		{"messages tool_use ids", "/v1/messages", func(size int) string { return carriedMessages(carryIDs(3, size)) }, "messages[1].content[2].id"},
		{"count_tokens tool_use ids", "/v1/messages/count_tokens", func(size int) string { return carriedMessages(carryIDs(3, size)) }, "messages[1].content[2].id"},
	}
}

// TestCarriedState_BoundedPerRequest: three pieces of state over the bound in a small
// request are a 400 carried_state_too_large naming the third, on every client API, and
// the upstream sees nothing: three of 7 MiB (21 MiB) in a request of some 25 KB over the
// default 20 MiB, on the chat API; three of 400 KiB over a configured 1 MiB on each API.
func TestCarriedState_BoundedPerRequest(t *testing.T) {
	t.Parallel() // its own gateways, fakes and servers (#54)
	for _, bound := range []struct {
		name, server string
		size         int
		cases        int // of carriedStateCases, from the first
	}{
		{name: "default 20 MiB", server: "", size: bigState, cases: 1},
		{name: "configured 1 MiB", server: smallBound, size: smallState, cases: 5},
	} {
		t.Run(bound.name, func(t *testing.T) {
			g, up := inflateGateway(t, bound.server)
			for _, tt := range carriedStateCases()[:bound.cases] {
				t.Run(tt.name, func(t *testing.T) {
					body := tt.body(bound.size)
					if len(body) > 64<<10 {
						t.Fatalf("the request is %d bytes, want a small one", len(body))
					}
					r := g.do("POST", tt.path, "client-key", []byte(body))
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
		})
	}
}

// TestCarriedState_StoredContinuation: the items a previous_response_id continuation
// takes from the store draw on the same allowance as the request's own. Under a 1 MiB
// bound, two 400 KiB blobs are served and stored; a continuation adding a third is a 400
// naming previous_response_id, and nothing more goes upstream.
func TestCarriedState_StoredContinuation(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	g, up := inflateGateway(t, smallBound)
	blob := blobItems(1, smallState)
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
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g, up := inflateGateway(t, smallBound)
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
