package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/telemetry"
)

// traceID is the client's trace (its traceparent), which the ledger keeps.
const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"

// TestConsole_BrowserDetail drives, in headless Chromium against a real gateway with
// tracing on and a real ledger (SQLite and PostgreSQL), what schema version 5 shows: the
// request detail lists the attempts of a request whose model failed and whose fallback
// answered, with its deployment and a link of its trace id to the configured trace UI;
// the Usage page groups by deployment; the Keys page's team editor creates a database
// team, edits its limits and budget and deletes it, and leaves a config team read-only.
// Schema version 6: a tool loop's request lists its server tools (calls, errors) and
// each attempt the tokens it was charged.
func TestConsole_BrowserDetail(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { consoleDetail(t, sqliteLedger(sqliteLedgers.Fresh(t))) })
	t.Run("postgres", func(t *testing.T) {
		url := postgres.NewDatabase(t)
		consoleDetail(t, `ledger: {type: postgres, url: "`+url+`", flush_interval: 20ms, spool_path: "off"}`)
	})
}

func consoleDetail(t *testing.T, ledgerYAML string) {
	b := newBrowser(t)
	// Tracing on, its spans sent to a receiver that takes them.
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(sink.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	tracer, err := telemetry.New(context.Background(), telemetry.Options{Traces: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tracer.Shutdown(context.Background()) })
	// OpenAI's overloaded answer (its documented 503 body).
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`)
	}))
	t.Cleanup(down.Close)
	d := sha256.Sum256([]byte(adminToken))
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`
backends:
  offline: {type: mock}
  down: {type: openai, base_url: %q, api_key: k, retries: {max: 0}}
models:
  demo: {backend: offline, upstream_model: echo, price: {input: 1, output: 2}}
  flaky: {backend: down, upstream_model: gpt-4o, fallbacks: [demo]}
  scripted:
    backend: offline
    script:
      - tool_calls: [{name: clock}, {name: clock, arguments: {zone: UTC}}]
      - text: "It is late."
keys:
  alice: {key: sk-alice, models: ["*"], team: cfgteam}
  agent: {key: sk-agent, models: ["*"], tools: [clock]}
teams: {cfgteam: {limits: {concurrent: 7}}}
tools:
  clock: {type: builtin, name: time_now}
%s
admin:
  keys: {ops: {key_sha256: %s}}
  resync: 100ms
  console: {trace_url: "https://jaeger.example/trace/{trace_id}?from=agate"}
`, down.URL+"/v1", ledgerYAML, hex.EncodeToString(d[:])), gatewaytest.Options{Tracer: tracer, Tools: true})

	// A tool loop's request first (the second row of the listing): the builtin called
	// twice, the second time with an argument its schema refuses.
	ac := gatewaytest.OpenAI(g.V1(), "sk-agent")
	agent, err := ac.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "scripted",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("what time is it")}})
	if err != nil {
		t.Fatal(err)
	}
	waitRecords(t, g, "agent", 1)
	c := gatewaytest.OpenAI(g.V1(), "sk-alice")
	if _, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "flaky",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("is the sea calm")}},
		option.WithHeader("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")); err != nil {
		t.Fatal(err)
	}
	waitRecords(t, g, "alice", 1)

	b.do("opening the console", chromedp.Navigate(g.URL+"/console/"))
	b.until("the sign-in form", `!!document.querySelector('form.signin input[name=token]')`)
	eval[any](b, `window.__csp = []; document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI)); null`)
	b.do("signing in", chromedp.SendKeys(chromedp.CSS(`input[name=token]`), adminToken), chromedp.Click(chromedp.CSS(`form.signin button`)))
	b.until("the overview", `!!document.querySelector('[data-page=overview] .cards .card')`)

	// The detail: the attempts in order, the deployment, the trace link.
	b.page("#/requests", `!!document.querySelector('[data-page=requests] tbody tr')`)
	b.do("the detail", chromedp.Click(chromedp.CSS(`[data-page=requests] tbody tr`)))
	b.until("the attempts", `!!document.querySelector('.detail table.attempts tbody tr')`)
	rows := eval[[]string](b, `[...document.querySelectorAll('.detail table.attempts tbody tr')].map(tr => [...tr.cells].map(td => td.textContent).join('|'))`)
	want := []string{"1|flaky|down/gpt-4o|503|server_error|", "2|demo (fallback)|offline/echo|200|—|"}
	if len(rows) != len(want) {
		t.Fatalf("attempt rows %q, want %d", rows, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(rows[i], w) {
			t.Errorf("attempt %d: %q, want it to start %q", i+1, rows[i], w)
		}
	}
	detail := b.text(`.detail dl`)
	for _, w := range []string{"offline/echo", "Fallbacks tried\n1", traceID} {
		if !strings.Contains(detail, w) {
			t.Errorf("the detail lacks %q: %q", w, detail)
		}
	}
	link := eval[[]string](b, `(a => a ? [a.href, a.textContent, a.rel, a.target] : [])(document.querySelector('.detail a.trace-link'))`)
	if want := []string{"https://jaeger.example/trace/" + traceID + "?from=agate", traceID, "noopener noreferrer", "_blank"}; strings.Join(link, " ") != strings.Join(want, " ") {
		t.Errorf("the trace link %q, want %q", link, want)
	}
	b.screenshot("request-detail")

	// The tool loop's request: its server tools, and the tokens of each attempt (one a
	// turn), which sum to the answer's.
	b.do("the tool loop's detail", chromedp.Click(chromedp.CSS(`[data-page=requests] tbody tr:nth-child(2)`)))
	b.until("the server tools", `!!document.querySelector('.detail table.tools tbody tr')`)
	tools := eval[[]string](b, `[...document.querySelectorAll('.detail table.tools tbody tr')].map(tr => [...tr.cells].map(td => td.textContent).join('|'))`)
	if len(tools) != 1 || !strings.HasPrefix(tools[0], "clock|clock|2|1|") || !strings.HasSuffix(tools[0], " ms") {
		t.Errorf("tool rows %q, want one: clock|clock|2|1|<time> ms", tools)
	}
	tokens := eval[[]string](b, `[...document.querySelectorAll('.detail table.attempts tbody tr')].map(tr => tr.cells[6].textContent)`)
	var prompt, completion int64
	for _, s := range tokens {
		var p, c int64
		if _, err := fmt.Sscanf(strings.ReplaceAll(s, ",", ""), "%d / %d", &p, &c); err != nil || p == 0 {
			t.Errorf("an attempt's tokens %q", s)
		}
		prompt, completion = prompt+p, completion+c
	}
	if len(tokens) != 2 || prompt != agent.Usage.PromptTokens || completion != agent.Usage.CompletionTokens {
		t.Errorf("attempts' tokens %q, want two summing to the answer's %d / %d", tokens, agent.Usage.PromptTokens, agent.Usage.CompletionTokens)
	}
	b.screenshot("request-detail-tools")

	// Usage by deployment.
	b.page("#/usage", `!!document.querySelector('[data-page=usage] table')`)
	b.do("group by deployment", chromedp.SetValue(chromedp.CSS(`select[name=group_by]`), "deployment"),
		chromedp.Click(chromedp.CSS(`[data-page=usage] form.filters button[type=submit]`)))
	b.until("usage by deployment", `[...document.querySelectorAll('[data-page=usage] table caption')].some(c => c.textContent === 'Usage by deployment' && c.parentElement.textContent.includes('offline/echo'))`)
	if csv := eval[string](b, `document.querySelector('[data-page=usage] a.button').getAttribute('href')`); !strings.Contains(csv, "group_by=deployment%2Cday") {
		t.Errorf("the CSV export %q is not by deployment", csv)
	}
	b.screenshot("usage-deployment")

	// The team editor: create, edit, delete a database team; the config team read-only.
	teamRow := func(name string) string {
		return eval[string](b, `(tr => tr ? tr.textContent : '')([...document.querySelectorAll('[data-page=keys] table:nth-of-type(2) tbody tr')].find(tr => tr.cells[0].textContent === '`+name+`'))`)
	}
	b.page("#/keys", `!!document.querySelector('[data-page=keys] table:nth-of-type(2)')`)
	if row := teamRow("cfgteam"); !strings.Contains(row, "config file (read-only)") || !strings.Contains(row, "7 at once") || !strings.Contains(row, "alice") {
		t.Errorf("the config team's row: %q", row)
	}
	b.do("create team", chromedp.Click(chromedp.Search(`//button[text()='Create team']`)))
	b.do("filling the team form", chromedp.SendKeys(chromedp.CSS(`input[name=team_name]`), "research"),
		chromedp.SendKeys(chromedp.CSS(`input[name=team_rpm]`), "10"),
		chromedp.SendKeys(chromedp.CSS(`input[name=team_budget_usd]`), "5"),
		chromedp.Click(chromedp.CSS(`form.form button[type=submit]`)))
	b.until("the new team", `[...document.querySelectorAll('[data-page=keys] table:nth-of-type(2) tbody tr')].some(tr => tr.cells[0].textContent === 'research')`)
	if row := teamRow("research"); !strings.Contains(row, "database") || !strings.Contains(row, "10 req/min") || !strings.Contains(row, "$5.00") {
		t.Errorf("the created team's row: %q", row)
	}
	b.do("edit team", chromedp.Click(chromedp.CSS(`button[aria-label="Edit team research"]`)))
	b.do("its limit", chromedp.SetValue(chromedp.CSS(`input[name=team_rpm]`), "25"),
		chromedp.Click(chromedp.CSS(`form.form button[type=submit]`)))
	b.until("the edited team", `document.querySelector('[data-page=keys] table:nth-of-type(2)').textContent.includes('25 req/min')`)
	var team struct {
		Limits struct {
			RequestsPerMinute int `json:"requests_per_minute"`
		} `json:"limits"`
		Budget struct {
			USD float64 `json:"usd"`
		} `json:"budget"`
		Source string `json:"source"`
	}
	adminGet(t, g, "/admin/v1/teams/research", &team)
	if team.Limits.RequestsPerMinute != 25 || team.Budget.USD != 5 || team.Source != "database" {
		t.Errorf("the team through the API after the edit: %+v", team)
	}
	b.screenshot("teams")
	eval[any](b, `window.confirm = () => true; null`) // the Delete button asks first
	b.do("delete team", chromedp.Click(chromedp.CSS(`button[aria-label="Delete team research"]`)))
	b.until("the team gone", `![...document.querySelectorAll('[data-page=keys] table:nth-of-type(2) tbody tr')].some(tr => tr.cells[0].textContent === 'research')`)
	if n := eval[int](b, `document.querySelectorAll('button[aria-label="Edit team cfgteam"], button[aria-label="Delete team cfgteam"]').length`); n != 0 {
		t.Errorf("the config team has %d edit or delete buttons", n)
	}
	if v := eval[[]string](b, `window.__csp`); len(v) > 0 {
		t.Errorf("CSP violations: %q", v)
	}
}
