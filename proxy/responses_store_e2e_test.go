package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/limits/redistest"
	"github.com/agate-gateway/agate/proxy"
)

// The end-to-end tests of the bounds and ownership of stored responses (issue #45): a
// stored conversation is bounded by responses.max_stored_bytes, a Redis store cannot
// evict the limiter's counters, and an upstream's id never hands one key's response to
// another.

// respID returns the id of a Response object body.
func respID(t *testing.T, body []byte) string {
	t.Helper()
	var r struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.ID == "" {
		t.Fatalf("not a Response object (%v): %.200s", err, body)
	}
	return r.ID
}

// words returns n bytes of words, which the mock backend echoes.
func words(n int) string { return strings.Repeat("w ", n/2) }

// TestResponses_ChainBoundedByMaxStoredBytes: a previous_response_id chain cannot grow
// past responses.max_stored_bytes (by default server.max_body_bytes): a response whose
// conversation is over it is served but not kept, and continuing it, or continuing a kept
// one with an input that would take the rebuilt conversation over it, is a 400 naming
// previous_response_id; the response's GET says why it is not there.
func TestResponses_ChainBoundedByMaxStoredBytes(t *testing.T) {
	url := gatewaytest.StartYAML(t, `server: {listen: "127.0.0.1:0", max_body_bytes: 200000}
backends:
  up: {type: mock}
models:
  m: {backend: up}
keys:
  alice: {key: alice-key, models: ["*"]}
`, gatewaytest.Options{Runtime: proxy.TestRuntime}).V1() + "/responses"
	post := func(input, prev string) respResult {
		b, _ := json.Marshal(map[string]any{"model": "m", "input": input, "previous_response_id": prev})
		if prev == "" {
			b, _ = json.Marshal(map[string]any{"model": "m", "input": input})
		}
		return post200OrError(t, url, string(b))
	}
	// Turn 1, 40 KB echoed: input, output and Response about 120 KB, kept.
	first := post(words(40000), "")
	if first.status != 200 {
		t.Fatalf("turn 1: %d %.300s", first.status, first.body)
	}
	id1 := respID(t, first.body)
	// Continuing it with 130 KB more would rebuild over 200 KB: refused before any call.
	tooMuch := post(words(130000), id1)
	if e := shortError(t, tooMuch); e.Status != 400 || e.Param != "previous_response_id" || e.Type != "invalid_request_error" ||
		!strings.Contains(e.Message, "too long to continue by id") {
		t.Errorf("continuation over the bound: %+v", e)
	}
	// Turn 2, 50 KB more: served (the rebuilt input is about 130 KB), but its record
	// (about 230 KB) is over the bound.
	second := post(words(50000), id1)
	if second.status != 200 {
		t.Fatalf("turn 2: %d %.300s", second.status, second.body)
	}
	id2 := respID(t, second.body)
	third := post("next", id2)
	if e := shortError(t, third); e.Status != 400 || e.Param != "previous_response_id" || !strings.Contains(e.Message, "send the conversation's items in input") {
		t.Errorf("continuing an overlong response: %+v", e)
	}
	for _, path := range []string{"/" + id2, "/" + id2 + "/input_items"} {
		r := getWithKey(t, url+path, "alice-key")
		if e := shortError(t, r); e.Status != 404 || !strings.Contains(e.Message, "max_stored_bytes") {
			t.Errorf("GET %s: %+v", path, e)
		}
	}
	// The first response is still there and can be continued within the bound.
	if r := post("short", id1); r.status != 200 {
		t.Errorf("continuing the kept response: %d %.300s", r.status, r.body)
	}
}

// shortError is decodeRespError for an answer that may be a long success: its status
// and 200 bytes of it when it is not an error.
func shortError(t *testing.T, r respResult) respError {
	t.Helper()
	if r.status < 400 {
		return respError{Status: r.status, Message: fmt.Sprintf("%.200s", r.body)}
	}
	return decodeRespError(t, r)
}

// post200OrError posts body with alice's key.
func post200OrError(t *testing.T, url, body string) respResult {
	t.Helper()
	return postJSON(t, url, "alice-key", body)
}

func getWithKey(t *testing.T, url, key string) respResult {
	t.Helper()
	return sendWithKey(t, "GET", url, key, nil)
}

// echoingResponses is a responses upstream that gives every response the same id, as one
// that echoes a client-chosen id would; the text names the request's number.
func echoingResponses(t *testing.T) (url string, bodies func() []string) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		n := len(got)
		got = append(got, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"resp_chosen","object":"response","created_at":1,"status":"completed","model":"up","output":[{"type":"message","id":"msg_%d","status":"completed","role":"assistant","content":[{"type":"output_text","text":"answer %d","annotations":[]}]}],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`, n, n)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// TestResponses_PassthroughNeverTakesAnotherKeysID: a responses upstream that answers bob
// with the id of alice's stored response does not give bob alice's id: alice's response
// stays hers (GET and continuation), bob's continuation by that id is a 404 that reaches
// no upstream, on both stores.
func TestResponses_PassthroughNeverTakesAnotherKeysID(t *testing.T) {
	for _, store := range []string{"memory", "redis"} {
		t.Run(store, func(t *testing.T) {
			up, bodies := echoingResponses(t)
			extra := "responses: {store: memory}\n"
			if store == "redis" {
				rs := redistest.Start(t)
				extra = fmt.Sprintf("state: {type: redis, url: %q}\nresponses: {store: redis}\n", rs.URL())
			}
			url := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  r: {type: responses, base_url: %q, api_key: k, retries: {max: 0}}
models:
  m: {backend: r, upstream_model: up}
keys:
  alice: {key: alice-key, models: ["*"]}
  bob: {key: bob-key, models: ["*"]}
%s`, up, extra), gatewaytest.Options{Runtime: proxy.TestRuntime}).V1() + "/responses"
			if r := postJSON(t, url, "alice-key", `{"model":"m","input":"alice's secret"}`); r.status != 200 {
				t.Fatalf("alice: %d %s", r.status, r.body)
			}
			if r := postJSON(t, url, "bob-key", `{"model":"m","input":"bob"}`); r.status != 200 || respID(t, r.body) != "resp_chosen" {
				t.Fatalf("bob: %d %s", r.status, r.body)
			}
			r := postJSON(t, url, "bob-key", `{"model":"m","input":"go on","previous_response_id":"resp_chosen"}`)
			if e := shortError(t, r); e.Status != 404 {
				t.Errorf("bob continuing the taken id: %+v", e)
			}
			if n := len(bodies()); n != 2 {
				t.Errorf("%d upstream requests, want 2 (bob's continuation must not reach the upstream)", n)
			}
			got := getWithKey(t, url+"/resp_chosen", "alice-key")
			if got.status != 200 || !strings.Contains(string(got.body), "answer 0") {
				t.Errorf("alice's GET: %d %s", got.status, got.body)
			}
			if r := postJSON(t, url, "alice-key", `{"model":"m","input":"go on","previous_response_id":"resp_chosen"}`); r.status != 200 {
				t.Errorf("alice continuing her response: %d %s", r.status, r.body)
			}
		})
	}
}

// TestResponses_RedisStoreCannotEvictLimits: one key filling the Redis store (about 3.6 MB
// of responses, three times the room a 2 MB maxmemory leaves an empty Redis) leaves another
// key's rate-limit counter alone, whether the store shares the limiter's Redis (under that
// maxmemory and volatile-lru: responses.max_bytes bounds the store in Redis too, so Redis
// never has to evict) or has its own instance (responses.url, allkeys-lru: Redis evicts
// stored responses there, never a counter). The bound was 4 MB with 9 MB of responses:
// the same proof at 2.5 times the CPU under -race, and long enough under load that bob's
// minute ran out before his third request (#54).
func TestResponses_RedisStoreCannotEvictLimits(t *testing.T) {
	t.Parallel() // its own gateways and Redis servers (#54)
	ctx := context.Background()
	const maxmemory = 2 << 20 // an empty redis-server uses some 0.9 MB of it
	start := func(t *testing.T, policy string) (*redistest.Server, *redis.Client) {
		rs := redistest.Start(t)
		opts, err := redis.ParseURL(rs.URL())
		if err != nil {
			t.Fatal(err)
		}
		rc := redis.NewClient(opts)
		t.Cleanup(func() { rc.Close() })
		for k, v := range map[string]string{"maxmemory": strconv.Itoa(maxmemory), "maxmemory-policy": policy} {
			if err := rc.ConfigSet(ctx, k, v).Err(); err != nil {
				t.Fatal(err)
			}
		}
		return rs, rc
	}
	for _, tt := range []struct {
		name string
		own  bool // the store on its own instance
	}{{"shared redis, store bounded", false}, {"store on its own redis", true}} {
		t.Run(tt.name, func(t *testing.T) {
			state, stateClient := start(t, "volatile-lru")
			store, storeClient := state, stateClient
			responses := "{store: redis, max_bytes: 400000}" // four responses of the fill
			if tt.own {
				store, storeClient = start(t, "allkeys-lru")
				responses = fmt.Sprintf("{store: redis, url: %q, max_bytes: 1000000000}", store.URL())
			}
			url := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: mock}
models:
  m: {backend: up}
keys:
  alice: {key: alice-key, models: ["*"]}
  bob: {key: bob-key, models: ["*"], limits: {requests_per_minute: 2}}
state: {type: redis, url: %q, timeout: 1s}
responses: %s
`, state.URL(), responses), gatewaytest.Options{Runtime: proxy.TestRuntime}).V1() + "/responses"
			for i := range 2 {
				if r := postJSON(t, url, "bob-key", `{"model":"m","input":"hi","store":false}`); r.status != 200 {
					t.Fatalf("bob %d: %d %s", i, r.status, r.body)
				}
			}
			// Alice stores about 3.6 MB of responses (33 KB echoed, three times in each
			// record): records of 100 KB, so that the store's bound, the record being written
			// and Redis's buffers for it fit the room left.
			body, _ := json.Marshal(map[string]any{"model": "m", "input": words(33334)})
			var last string
			for i := range 36 {
				r := postJSON(t, url, "alice-key", string(body))
				if r.status != 200 {
					t.Fatalf("alice %d: %d %.300s", i, r.status, r.body)
				}
				last = respID(t, r.body)
			}
			info := stateClient.Info(ctx, "stats").Val()
			if in := infoField(storeClient.Info(ctx, "stats").Val(), "total_net_input_bytes"); in < 3*(maxmemory-1<<20) {
				t.Errorf("the store's Redis was sent %d bytes: not three times the room its maxmemory leaves", in)
			}
			r := postJSON(t, url, "bob-key", `{"model":"m","input":"hi","store":false}`)
			if r.status != 429 {
				t.Errorf("bob's third request in the minute: %d, want 429 (his counter was evicted?) %.200s\n%s", r.status, r.body, evictedLine(info))
			}
			if got := getWithKey(t, url+"/"+last, "alice-key"); got.status != 200 {
				t.Errorf("alice's last response: %d %.200s", got.status, got.body)
			}
			if tt.own {
				if n := stateClient.Keys(ctx, "agate:rs*").Val(); len(n) != 0 {
					t.Errorf("the state's Redis holds stored responses: %v", n)
				}
				if evictedLine(storeClient.Info(ctx, "stats").Val()) == "evicted_keys:0" {
					t.Errorf("the store's own Redis evicted nothing: the test did not fill it")
				}
			} else if total, _ := storeClient.Get(ctx, "agate:rsb").Int64(); total <= 0 || total > 400000 {
				t.Errorf("the store holds %d bytes, want at most responses.max_bytes", total)
			}
		})
	}
}

// infoField returns the integer field name of an INFO answer, -1 when it has none.
func infoField(info, name string) int {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+":"); ok {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
	}
	return -1
}

// evictedLine returns the evicted_keys line of INFO stats.
func evictedLine(info string) string {
	for _, l := range strings.Split(info, "\n") {
		if strings.HasPrefix(l, "evicted_keys:") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// TestResponses_FallbackStoresUnderTheBackendThatAnswered: a passthrough response that a
// fallback's backend answered (the primary 503s) is stored upstream by that backend, so
// its record names it: a continuation through the primary's model is told which backend
// holds it (400, previous_response_id) instead of reaching the primary, which does not;
// one through the fallback's model reaches the fallback.
func TestResponses_FallbackStoresUnderTheBackendThatAnswered(t *testing.T) {
	var primaryCalls atomic.Int32
	primary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		primaryCalls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`)
	}))
	t.Cleanup(primary.Close)
	spare, bodies := echoingResponses(t)
	url := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  main: {type: responses, base_url: %q, api_key: k, retries: {max: 0}}
  spare: {type: responses, base_url: %q, api_key: k, retries: {max: 0}}
models:
  m: {backend: main, upstream_model: up, fallbacks: [m2]}
  m2: {backend: spare, upstream_model: up}
responses: {store: memory}
keys:
  alice: {key: alice-key, models: ["*"]}
`, primary.URL, spare), gatewaytest.Options{Runtime: proxy.TestRuntime}).V1() + "/responses"
	if r := postJSON(t, url, "alice-key", `{"model":"m","input":"hi"}`); r.status != 200 || respID(t, r.body) != "resp_chosen" {
		t.Fatalf("first turn: %d %s", r.status, r.body)
	}
	before := primaryCalls.Load()
	r := postJSON(t, url, "alice-key", `{"model":"m","input":"go on","previous_response_id":"resp_chosen"}`)
	if e := shortError(t, r); e.Status != 400 || e.Param != "previous_response_id" || !strings.Contains(e.Message, `"spare"`) {
		t.Errorf("continuing through the primary's model: %+v, want a 400 on previous_response_id naming backend spare", e)
	}
	if n := primaryCalls.Load(); n != before {
		t.Errorf("the continuation reached the primary (%d calls, want %d)", n, before)
	}
	if r := postJSON(t, url, "alice-key", `{"model":"m2","input":"go on","previous_response_id":"resp_chosen"}`); r.status != 200 {
		t.Errorf("continuing through the fallback's model: %d %s", r.status, r.body)
	}
	if n := len(bodies()); n != 2 {
		t.Errorf("%d requests reached the fallback, want 2", n)
	}
}
