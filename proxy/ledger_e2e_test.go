package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/internal/redact"
	"github.com/agate-gateway/agate/ledger"
	"github.com/agate-gateway/agate/ledger/pgtest"
	"github.com/agate-gateway/agate/proxy"
)

// ledgerRow is what TestLedger_EndToEnd compares of a record: everything but the times
// and the request id, which vary.
type ledgerRow struct {
	Key, Team, API, Model, Served, Backend string
	Stream                                 bool
	Status                                 int
	ErrorType                              string
	Prompt, Completion                     int64
	Cost                                   string
	Estimated                              bool
	ToolCalls, Fallbacks                   int
}

func rowOf(r ledger.Record) ledgerRow {
	return ledgerRow{Key: r.Key, Team: r.Team, API: r.API, Model: r.Model, Served: r.Served, Backend: r.Backend,
		Stream: r.Stream, Status: r.Status, ErrorType: r.ErrorType, Prompt: r.PromptTokens, Completion: r.CompletionTokens,
		Cost: fmt.Sprintf("%.6f", r.CostUSD), Estimated: r.Estimated, ToolCalls: r.ToolCalls, Fallbacks: r.Fallbacks}
}

// TestLedger_EndToEnd: traffic through the gateway, from the official SDKs (chat
// completions, Responses, Messages; streamed and not), a server tool loop, a fallback, an
// aborted stream and a request refused by a budget, makes exactly one record each, in
// SQLite and in PostgreSQL, and the rollups' usage report agrees with the Prometheus
// token counters.
func TestLedger_EndToEnd(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			opts := ledger.Options{Type: "sqlite", DSN: sqliteLedgers.Fresh(t), FlushInterval: time.Hour}
			if db == "postgres" {
				opts = ledger.Options{Type: "postgres", DSN: postgres.NewDatabase(t), FlushInterval: time.Hour}
			}
			l, err := ledger.Open(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close(context.Background()) })
			testLedgerTraffic(t, l)
		})
	}
}

func testLedgerTraffic(t *testing.T, l *ledger.Ledger) {
	fakes := gatewaytest.Fleet(func(kind string) *gatewaytest.Fake {
		f := gatewaytest.NewFakeJSON(t, kind)
		f.SetScript(gatewaytest.Turn{Text: "hello"}, gatewaytest.Turn{Text: "hello"}, gatewaytest.Turn{Text: "hello"}, gatewaytest.Turn{Text: "hello"})
		return f
	})
	// The tool loop's upstream: a call of the clock, then an answer.
	loopFake := gatewaytest.NewFakeJSON(t, "openai")
	loopFake.SetScript(gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: "clock", Args: "{}"}}}, gatewaytest.Turn{Text: "it is late"})
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`)
	}))
	t.Cleanup(down.Close)
	// The aborted stream's upstream (Gemini): usage on every chunk, streaming until the
	// gateway hangs up once its client left.
	clientLeft := make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		io.WriteString(w, "data: "+`{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":1,"totalTokenCount":10},"modelVersion":"gemini-2.5-flash"}`+"\r\n\r\n")
		f.Flush()
		<-clientLeft
		for i := 0; i < 1_000_000; i++ {
			if _, err := io.WriteString(w, "data: "+`{"candidates":[{"content":{"parts":[{"text":" more"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":2,"totalTokenCount":11},"modelVersion":"gemini-2.5-flash"}`+"\r\n\r\n"); err != nil || r.Context().Err() != nil {
				return
			}
			f.Flush()
		}
	}))
	t.Cleanup(stalled.Close)

	var y strings.Builder
	y.WriteString("backends:\n")
	for _, k := range gatewaytest.Kinds {
		fmt.Fprintf(&y, "  %s: {type: %s, base_url: %q, api_key: upstream-secret, retries: {max: 0}}\n", k, k, fakes[k].BaseURL())
	}
	fmt.Fprintf(&y, `  looper: {type: openai, base_url: %q, api_key: k, retries: {max: 0}}
  down: {type: openai, base_url: %q, api_key: k, retries: {max: 0}}
  stalled: {type: gemini, base_url: %q, api_key: k, retries: {max: 0}}
models:
`, loopFake.BaseURL(), down.URL+"/v1", stalled.URL)
	for _, k := range gatewaytest.Kinds {
		fmt.Fprintf(&y, "  m-%s: {backend: %s, upstream_model: fake-model}\n", k, k)
	}
	y.WriteString(`  loop: {backend: looper, upstream_model: fake-model, price: {input: 1, output: 2}}
  flaky: {backend: down, upstream_model: fake-model, fallbacks: [m-openai], price: {input: 100, output: 100}}
  stalls: {backend: stalled, upstream_model: gemini-2.5-flash}
  priced: {backend: openai, upstream_model: fake-model, price: {input: 3, output: 15, cached_input: 0.3}}
keys:
  alice: {key: sk-alice, models: ["*"], team: eng, tools: [clock]}
  bob: {key: sk-bob, models: ["*"], team: ops}
  carol: {key: sk-carol, models: [priced], budget: {usd: 0.000001}}
tools:
  clock: {type: builtin, name: time_now}
`)
	g := gatewaytest.StartYAML(t, y.String(), gatewaytest.Options{Runtime: proxy.TestRuntime, Tools: true, Ledger: l})
	ctx := context.Background()

	alice, bob := gatewaytest.OpenAI(g.V1(), "sk-alice"), gatewaytest.OpenAI(g.V1(), "sk-bob")
	user := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}
	// 1. chat, not streamed
	if _, err := alice.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m-openai", Messages: user}); err != nil {
		t.Fatal(err)
	}
	// 2. chat, streamed, over Anthropic
	s := alice.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "m-anthropic", Messages: user})
	for s.Next() {
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	// 3. Responses, streamed
	rs := bob.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "m-responses",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	for rs.Next() {
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	// 4. Messages, streamed, over Gemini
	ac := gatewaytest.Anthropic(g.URL, "sk-bob")
	ms := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "m-gemini", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	for ms.Next() {
	}
	if err := ms.Err(); err != nil {
		t.Fatal(err)
	}
	// 5. a server tool loop: two turns, one tool call
	if _, err := alice.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "loop", Messages: user}); err != nil {
		t.Fatal(err)
	}
	// 6. a fallback: flaky's backend is down, m-openai answers
	if _, err := bob.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "flaky", Messages: user}); err != nil {
		t.Fatal(err)
	}
	// 7. a stream the client leaves after the first event
	conn, err := net.Dial("tcp", g.Addr)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"stalls","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-bob\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	br := bufio.NewReader(conn)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		if strings.HasPrefix(line, "data: ") {
			break
		}
	}
	conn.Close()
	close(clientLeft)
	// 8. carol's budget (a millionth of a dollar) takes one request, then refuses.
	carol := gatewaytest.OpenAI(g.V1(), "sk-carol")
	if _, err := carol.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "priced", Messages: user}); err != nil {
		t.Fatal(err)
	}
	if _, err := carol.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "priced", Messages: user}); err == nil {
		t.Fatal("carol's second request was admitted over her budget")
	}

	var recs []ledger.Record
	deadline := time.Now().Add(10 * time.Second)
	for len(recs) < 9 && time.Now().Before(deadline) { // the aborted stream ends when the gateway notices
		g.Server.Settle()
		if err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if recs, _, err = l.Requests(ctx, ledger.RequestQuery{}); err != nil {
			t.Fatal(err)
		}
		if len(recs) < 9 {
			time.Sleep(5 * time.Millisecond) // polling for the aborted stream's end, not timing the test
		}
	}
	got := map[string]ledgerRow{}
	for _, r := range recs {
		k := r.Key + " " + r.API + " " + r.Model
		if r.Status == 429 {
			k += " refused"
		}
		if _, dup := got[k]; dup {
			t.Errorf("two records for %s", k)
		}
		got[k] = rowOf(r)
	}
	want := map[string]ledgerRow{
		"alice chat m-openai":       {Key: "alice", Team: "eng", API: "chat", Model: "m-openai", Served: "m-openai", Backend: "openai", Status: 200, Prompt: 10, Completion: 5, Cost: "0.000000"},
		"alice chat m-anthropic":    {Key: "alice", Team: "eng", API: "chat", Model: "m-anthropic", Served: "m-anthropic", Backend: "anthropic", Stream: true, Status: 200, Prompt: 10, Completion: 5, Cost: "0.000000"},
		"bob responses m-responses": {Key: "bob", Team: "ops", API: "responses", Model: "m-responses", Served: "m-responses", Backend: "responses", Stream: true, Status: 200, Prompt: 10, Completion: 5, Cost: "0.000000"},
		"bob messages m-gemini":     {Key: "bob", Team: "ops", API: "messages", Model: "m-gemini", Served: "m-gemini", Backend: "gemini", Stream: true, Status: 200, Prompt: 10, Completion: 5, Cost: "0.000000"},
		"alice chat loop":           {Key: "alice", Team: "eng", API: "chat", Model: "loop", Served: "loop", Backend: "looper", Status: 200, Prompt: 20, Completion: 10, Cost: "0.000040", ToolCalls: 1},
		"bob chat flaky":            {Key: "bob", Team: "ops", API: "chat", Model: "flaky", Served: "m-openai", Backend: "down", Status: 200, Prompt: 10, Completion: 5, Cost: "0.000000", Fallbacks: 1},
		"bob chat stalls":           {Key: "bob", Team: "ops", API: "chat", Model: "stalls", Served: "stalls", Backend: "stalled", Stream: true, Status: 499, ErrorType: "client_closed", Prompt: 9, Completion: 2, Cost: "0.000000"},
		"carol chat priced":         {Key: "carol", API: "chat", Model: "priced", Served: "priced", Backend: "openai", Status: 200, Prompt: 10, Completion: 5, Cost: "0.000105"},
		"carol chat priced refused": {Key: "carol", API: "chat", Model: "priced", Backend: "openai", Status: 429, ErrorType: "insufficient_quota", Cost: "0.000000"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ledger records (-want +got):\n%s", diff)
	}

	// The usage report (rollups) per key agrees with gateway_tokens_total.
	day := time.Now().UTC().Truncate(24 * time.Hour)
	usage, err := l.Usage(ctx, ledger.UsageQuery{From: day.Add(-24 * time.Hour), To: day.Add(48 * time.Hour), GroupBy: []string{"key"}})
	if err != nil {
		t.Fatal(err)
	}
	fromLedger := map[string][2]float64{}
	for _, u := range usage {
		fromLedger[u.Key] = [2]float64{float64(u.PromptTokens), float64(u.CompletionTokens)}
	}
	g.Server.Settle()
	mfs, err := g.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	fromMetrics := map[string][2]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "gateway_tokens_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			lab := map[string]string{}
			for _, p := range m.GetLabel() {
				lab[p.GetName()] = p.GetValue()
			}
			v := fromMetrics[lab["key"]]
			switch lab["type"] {
			case "prompt":
				v[0] += m.GetCounter().GetValue()
			case "completion":
				v[1] += m.GetCounter().GetValue()
			}
			fromMetrics[lab["key"]] = v
		}
	}
	if diff := cmp.Diff(fromMetrics, fromLedger); diff != "" {
		t.Errorf("usage by key: ledger rollups vs gateway_tokens_total (-metrics +ledger):\n%s", diff)
	}
}

// TestLedger_FromConfig_DrainedAtShutdown: a ledger the configuration turns on is opened
// by the server, and a graceful shutdown writes every queued record before it returns.
func TestLedger_FromConfig_DrainedAtShutdown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	g := gatewaytest.StartYAML(t, `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys: {alice: {key: sk-alice, models: ["*"], team: eng}}
ledger: {type: sqlite, path: `+path+`, flush_interval: 1h}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	c := gatewaytest.OpenAI(g.V1(), "sk-alice")
	for range 3 {
		if _, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "demo",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Server.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx, ledger.Options{Type: "sqlite", DSN: path})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	recs, _, err := l.Requests(ctx, ledger.RequestQuery{})
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records after shutdown (%v), want 3", len(recs), err)
	}
	if r := recs[0]; r.Key != "alice" || r.Team != "eng" || r.Model != "demo" || r.Status != 200 {
		t.Errorf("record %+v", r)
	}
}

// TestLedger_DatabaseDown_ServesAndSaysDegraded: with the ledger's PostgreSQL down,
// requests are served, /readyz answers 200 "degraded" naming the ledger, and once the
// database is back the spooled records are written and /readyz is ready again.
func TestLedger_DatabaseDown_ServesAndSaysDegraded(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	pg := pgtest.Start(t)
	url := pg.NewDatabase(t)
	g := gatewaytest.StartYAML(t, `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys: {alice: {key: sk-alice, models: ["*"]}}
ledger: {type: postgres, url: "`+url+`", flush_interval: 10ms, spool_path: `+filepath.Join(t.TempDir(), "spool")+`}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	c := gatewaytest.OpenAI(g.V1(), "sk-alice")
	ask := func() {
		t.Helper()
		if _, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "demo",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}); err != nil {
			t.Fatal(err)
		}
	}
	readyz := func() (int, string) {
		resp, err := http.Get(g.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	pg.Stop()
	ask()
	waitFor(t, "/readyz to say degraded", func() bool {
		code, body := readyz()
		return code == 200 && strings.Contains(body, `"status":"degraded"`) && strings.Contains(body, "ledger")
	})
	if _, body := readyz(); strings.Contains(body, "postgres://") {
		t.Errorf("/readyz shows the database URL: %s", body)
	}
	ask() // still served
	pg.Restart(t)
	waitFor(t, "/readyz to be ready again", func() bool {
		code, body := readyz()
		return code == 200 && body == `{"status":"ready"}`
	})
	l, err := ledger.Open(context.Background(), ledger.Options{Type: "postgres", DSN: url})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	recs, _, err := l.Requests(context.Background(), ledger.RequestQuery{})
	if err != nil || len(recs) != 2 {
		t.Errorf("%d records after the outage (%v), want 2", len(recs), err)
	}
}

// waitFor polls cond until it holds (10 s at most).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling, not timing the test
	}
}

// TestLedger_CaptureContent: with ledger.capture_content the record holds the last
// user text and the answer's text, credentials masked and cut to max_content_bytes;
// without it, neither.
func TestLedger_CaptureContent(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	for _, capture := range []bool{false, true} {
		t.Run(fmt.Sprint("capture=", capture), func(t *testing.T) {
			path := sqliteLedgers.Fresh(t)
			g := gatewaytest.StartYAML(t, fmt.Sprintf(`
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys: {alice: {key: sk-alice, models: ["*"]}}
ledger: {type: sqlite, path: %s, capture_content: %v, max_content_bytes: 40}
`, path, capture), gatewaytest.Options{Runtime: proxy.TestRuntime})
			c := gatewaytest.OpenAI(g.V1(), "sk-alice")
			out, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "demo",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("first"), openai.UserMessage("key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 please")}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := g.Server.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			l, err := ledger.Open(ctx, ledger.Options{Type: "sqlite", DSN: path})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close(ctx)
			recs, _, err := l.Requests(ctx, ledger.RequestQuery{})
			if err != nil || len(recs) != 1 {
				t.Fatalf("%d records, %v", len(recs), err)
			}
			wantPrompt, wantAnswer := "", ""
			if capture {
				wantPrompt = "key sk-*** please"
				wantAnswer = redact.Mask(out.Choices[0].Message.Content) // the mock echoes the prompt
				if len(wantAnswer) > 40 {
					wantAnswer = wantAnswer[:40]
				}
			}
			if recs[0].Prompt != wantPrompt || recs[0].Completion != wantAnswer {
				t.Errorf("prompt %q, completion %q; want %q, %q", recs[0].Prompt, recs[0].Completion, wantPrompt, wantAnswer)
			}
		})
	}
}
