package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/internal/gatewaytest"
)

// This file checks Agate's metrics, alert rules and dashboard queries with a real
// Prometheus server scraping a real gateway (proxy.Server on a loopback port, wired as
// cmd/gateway wires it) that serves known traffic from the official OpenAI Go SDK.

// e2eConfig is the gateway under test. {{UP}} is the fake OpenAI upstream's /v1 root:
// upstream model "gpt-4o" answers with recordings, "broken" with a 500.
const e2eConfig = `server: {listen: "127.0.0.1:0"}
backends:
  offline: {type: mock}
  up: {type: openai, base_url: "{{UP}}", api_key: upstream-secret, retries: {max: 0}}
  down: {type: openai, base_url: "{{UP}}", api_key: upstream-secret, retries: {max: 0}}
  up2: {type: openai, base_url: "{{UP}}", api_key: upstream-secret, retries: {max: 0}}
models:
  demo: {backend: offline}
  gpt: {backend: up, upstream_model: gpt-4o}
  broken: {backend: down, upstream_model: broken}
  flaky: {backend: down, upstream_model: broken, fallbacks: [gpt]}
  pooled:
    deployments: [{backend: up, upstream_model: gpt-4o}, {backend: up2, upstream_model: gpt-4o}]
    affinity: prefix
keys:
  alice: {key: sk-alice, models: ["*"]}
  agent: {key: sk-agent, models: ["demo"], tools: [clock]}
tools:
  clock: {type: builtin, name: time_now}
`

// openAIUpstream is a loopback fake of the OpenAI chat completions API: recorded bodies
// for model gpt-4o (streamed one event per write and flush), the documented 500 error
// body for any other model.
func openAIUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	recorded, err := os.ReadFile("testdata/openai-chat/text.mirascope.json")
	if err != nil {
		t.Fatal(err)
	}
	// Served byte for byte: OpenAI sends non-streamed completions pretty-printed, and the
	// gateway must count their usage all the same.
	jsonBody := bytes.NewBuffer(recorded)
	sse, err := os.ReadFile("testdata/openai-chat/text-include-usage.mirascope.sse")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		switch {
		case req.Model != "gpt-4o":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`)
		case req.Stream:
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			for _, ev := range bytes.SplitAfter(sse, []byte("\n\n")) {
				if len(ev) == 0 {
					continue
				}
				if _, err := w.Write(ev); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Write(jsonBody.Bytes())
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// e2eGateway is a running gateway with its registry and configuration watcher.
type e2eGateway struct {
	addr       string // host:port
	reg        *prometheus.Registry
	watcher    *config.Watcher
	configPath string
}

func startE2EGateway(t *testing.T, upstreamV1 string) *e2eGateway {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "agate.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(e2eConfig, "{{UP}}", upstreamV1)), 0o600); err != nil {
		t.Fatal(err)
	}
	g := gatewaytest.StartFile(t, path, gatewaytest.Options{Tools: true, ShutdownTimeout: 10 * time.Second, Strict: true})
	return &e2eGateway{addr: g.Addr, reg: g.Registry, watcher: g.Watcher, configPath: path}
}

// promServer is a running Prometheus.
type promServer struct {
	base string // http://127.0.0.1:port
	logs *gatewaytest.Buffer
}

// startPrometheus runs the prometheus binary on a free loopback port, scraping target
// every second and evaluating the rule file every second, and returns once it is ready.
func startPrometheus(t *testing.T, binary, target, rules string) *promServer {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: agate
    static_configs:
      - targets: [%q]
`, rules, target)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The port is found by binding and releasing it; another process may take it in
	// between, so a start that fails is retried on a new port.
	for attempt := 1; ; attempt++ {
		p, err := runPrometheus(t, binary, cfgPath, filepath.Join(dir, fmt.Sprintf("data%d", attempt)))
		if err == nil {
			return p
		}
		if attempt == 3 {
			t.Fatal(err)
		}
		t.Logf("%v; retrying on another port", err)
	}
}

// runPrometheus starts prometheus on a free loopback port and waits until it is ready.
// It returns an error if the process exits first, and fails t on anything else.
func runPrometheus(t *testing.T, binary, cfgPath, dataDir string) (*promServer, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := &promServer{base: "http://" + addr, logs: &gatewaytest.Buffer{}}
	cmd := exec.Command(binary, "--config.file="+cfgPath, "--storage.tsdb.path="+dataDir,
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Dir = filepath.Dir(cfgPath)
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", binary, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ready := func() bool {
		resp, err := http.Get(p.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	deadline := time.Now().Add(time.Minute)
	for !ready() {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("prometheus exited before it was ready: %v\n%s", err, p.logs)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			t.Fatalf("prometheus not ready after a minute:\n%s", p.logs)
		}
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("prometheus log:\n%s", p.logs)
		}
	})
	return p, nil
}

// apiResponse is the envelope of Prometheus's HTTP API.
type apiResponse struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Data      json.RawMessage `json:"data"`
}

func (p *promServer) get(t *testing.T, path string, params url.Values) (json.RawMessage, error) {
	t.Helper()
	resp, err := http.Get(p.base + path + "?" + params.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r apiResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: decoding %d response: %w", path, resp.StatusCode, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s: %s: %s", path, r.ErrorType, r.Error)
	}
	return r.Data, nil
}

// sample is one element of an instant vector.
type sample struct {
	Metric map[string]string
	Value  float64
	Time   float64 // Unix seconds
}

// query runs an instant query and returns its vector (a scalar becomes one sample).
func (p *promServer) query(t *testing.T, q string) ([]sample, error) {
	return p.queryAt(t, q, 0)
}

// queryAt runs an instant query evaluated at Unix time at (now if 0).
func (p *promServer) queryAt(t *testing.T, q string, at float64) ([]sample, error) {
	t.Helper()
	params := url.Values{"query": {q}}
	if at != 0 {
		params.Set("time", strconv.FormatFloat(at, 'f', 3, 64))
	}
	data, err := p.get(t, "/api/v1/query", params)
	if err != nil {
		return nil, err
	}
	var res struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, err
	}
	decodePair := func(raw [2]json.RawMessage) (sample, error) {
		var s sample
		var v string
		if err := json.Unmarshal(raw[0], &s.Time); err != nil {
			return s, err
		}
		if err := json.Unmarshal(raw[1], &v); err != nil {
			return s, err
		}
		f, err := strconv.ParseFloat(v, 64)
		s.Value = f
		return s, err
	}
	switch res.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string  `json:"metric"`
			Value  [2]json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(res.Result, &vec); err != nil {
			return nil, err
		}
		out := make([]sample, 0, len(vec))
		for _, e := range vec {
			s, err := decodePair(e.Value)
			if err != nil {
				return nil, err
			}
			s.Metric = e.Metric
			out = append(out, s)
		}
		return out, nil
	case "scalar":
		var pair [2]json.RawMessage
		if err := json.Unmarshal(res.Result, &pair); err != nil {
			return nil, err
		}
		s, err := decodePair(pair)
		return []sample{s}, err
	default:
		return nil, fmt.Errorf("query %q: result type %s", q, res.ResultType)
	}
}

// mustQueryAt runs q evaluated at Unix time at and returns its samples keyed by the
// values of the given labels joined with "/" ("" for a single sample without them).
func (p *promServer) mustQueryAt(t *testing.T, q string, at float64, by ...string) map[string]float64 {
	t.Helper()
	samples, err := p.queryAt(t, q, at)
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	out := map[string]float64{}
	for _, s := range samples {
		var key []string
		for _, l := range by {
			key = append(key, s.Metric[l])
		}
		out[strings.Join(key, "/")] = s.Value
	}
	return out
}

// poll calls cond until it reports done or a minute passes.
func poll(t *testing.T, what string, cond func() (done bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		done, state := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last state: %s", what, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sent is what the client observed of the traffic, the figures Prometheus must show.
type sent struct {
	codes                    map[string]float64 // status code -> requests
	prompt, completion       float64            // token sums from the usage the client received
	timed, streamsWithTokens float64            // requests that reached a route; successful streams
}

func (s *sent) record(t *testing.T, name string, err error, wantCode int, usage openai.CompletionUsage) {
	t.Helper()
	code := 200
	if err != nil {
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("%s: %v", name, err)
		}
		code = apiErr.StatusCode
	}
	if code != wantCode {
		t.Fatalf("%s: status %d (%v), want %d", name, code, err, wantCode)
	}
	s.codes[strconv.Itoa(code)]++
	s.prompt += float64(usage.PromptTokens)
	s.completion += float64(usage.CompletionTokens)
}

// TestPrometheus_ScrapesWhatWasSent is the real-Prometheus check: known traffic through
// a gateway, then Prometheus's HTTP API must show exactly that traffic, every alert rule
// must evaluate without error and every dashboard query must run.
func TestPrometheus_ScrapesWhatWasSent(t *testing.T) {
	// Its own gateway, upstream and Prometheus; most of its time is Prometheus's one-second
	// scrapes and evaluations, which now wait beside the other parallel test (#54).
	t.Parallel()
	promBinary := gatewaytest.Require(t, "prometheus", "apt-get install --no-install-recommends prometheus")
	rules, err := filepath.Abs(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	up := openAIUpstream(t)
	g := startE2EGateway(t, up.URL+"/v1")
	prom := startPrometheus(t, promBinary, g.addr, rules)

	ctx := context.Background()
	client := func(key string) openai.Client {
		return gatewaytest.OpenAI("http://"+g.addr+"/v1/", key, option.WithRequestTimeout(30*time.Second))
	}
	alice, agent := client("sk-alice"), client("sk-agent")
	params := func(model, text string) openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}}
	}
	s := &sent{codes: map[string]float64{}}
	complete := func(name string, c openai.Client, p openai.ChatCompletionNewParams, wantCode int) {
		resp, err := c.Chat.Completions.New(ctx, p)
		var usage openai.CompletionUsage
		if err == nil {
			usage = resp.Usage
		}
		s.record(t, name, err, wantCode, usage)
	}
	stream := func(name string, c openai.Client, p openai.ChatCompletionNewParams) {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		st := c.Chat.Completions.NewStreaming(ctx, p)
		var usage openai.CompletionUsage
		for st.Next() {
			if ch := st.Current(); ch.Usage.TotalTokens > 0 {
				usage = ch.Usage
			}
		}
		s.record(t, name, st.Err(), 200, usage)
		if usage.TotalTokens == 0 {
			t.Fatalf("%s: the stream carried no usage", name)
		}
		s.streamsWithTokens++
	}

	// The traffic goes twice, with a scrape in between, so that the dashboard's rates have
	// two samples to work with.
	const perRound = 11
	round := func() {
		complete("mock", alice, params("demo", "one two three"), 200)
		stream("mock stream", alice, params("demo", "four five"))
		complete("openai", alice, params("gpt", "What is 4200 + 42?"), 200)
		stream("openai stream", alice, params("gpt", "What is 4200 + 42?"))
		complete("fallback", alice, params("flaky", "What is 4200 + 42?"), 200)
		complete("server-side tool loop", agent, params("demo", "what does the clock say"), 200)
		complete("upstream error", alice, params("broken", "hi"), 500)
		// Twice the same conversation: affinity keeps it on deployment up (a miss, then hits).
		complete("deployments", alice, params("pooled", "What is 4200 + 42?"), 200)
		complete("deployments again", alice, params("pooled", "What is 4200 + 42?"), 200)
		s.timed += 9 // every request above reached its route, the failed one too
		complete("bad key", client("sk-mallory"), params("demo", "hi"), 401)
		complete("unknown model", alice, params("nope", "hi"), 404)
	}
	round()
	waitForScrape(t, g, prom, perRound)
	round()

	// One good and one bad configuration reload.
	good, err := os.ReadFile(g.configPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(g.configPath, append(good, "  # a comment changes the bytes\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := g.watcher.Reload(); err != nil {
		t.Fatalf("good reload: %v", err)
	}
	if err := os.WriteFile(g.configPath, append(good, "bogus: true\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := g.watcher.Reload(); err == nil {
		t.Fatal("a reload of an unknown key succeeded")
	}

	settled, scraped := waitForScrape(t, g, prom, 2*perRound)

	t.Run("figures", func(t *testing.T) {
		got := map[string]map[string]float64{
			"requests by code":               prom.mustQueryAt(t, `sum by (code) (gateway_requests_total)`, scraped, "code"),
			"tokens by type":                 prom.mustQueryAt(t, `sum by (type) (gateway_tokens_total)`, scraped, "type"),
			"request durations":              prom.mustQueryAt(t, `sum(gateway_request_duration_seconds_count)`, scraped),
			"request duration +Inf bucket":   prom.mustQueryAt(t, `sum(gateway_request_duration_seconds_bucket{le="+Inf"})`, scraped),
			"times to first token":           prom.mustQueryAt(t, `sum(gateway_time_to_first_token_seconds_count)`, scraped),
			"upstream attempts":              prom.mustQueryAt(t, `sum by (backend, code) (gateway_upstream_duration_seconds_count)`, scraped, "backend", "code"),
			"upstream retries and fallbacks": prom.mustQueryAt(t, `sum by (backend, reason) (gateway_upstream_retries_total)`, scraped, "backend", "reason"),
			"tool calls":                     prom.mustQueryAt(t, `sum by (tool, outcome) (gateway_tool_calls_total)`, scraped, "tool", "outcome"),
			"tool durations":                 prom.mustQueryAt(t, `sum by (tool) (gateway_tool_duration_seconds_count)`, scraped, "tool"),
			"tool cache lookups":             prom.mustQueryAt(t, `sum by (result) (gateway_tool_cache_total)`, scraped, "result"),
			"tool loops":                     prom.mustQueryAt(t, `sum(gateway_loop_iterations_count)`, scraped),
			"tool loop iterations":           prom.mustQueryAt(t, `sum(gateway_loop_iterations_sum)`, scraped),
			"config reloads":                 prom.mustQueryAt(t, `sum by (result) (gateway_config_reloads_total)`, scraped, "result"),
			"in flight":                      prom.mustQueryAt(t, `sum(gateway_inflight_requests)`, scraped),
		}
		want := map[string]map[string]float64{
			"requests by code": s.codes,
			// The mock's and the recordings' usage as the client received it; the
			// tool loop's usage adds up both model turns, as the metric does.
			"tokens by type":                 {"prompt": s.prompt, "completion": s.completion},
			"request durations":              {"": s.timed},
			"request duration +Inf bucket":   {"": s.timed},
			"times to first token":           {"": s.streamsWithTokens},
			"upstream attempts":              {"up/200": 2 * 5, "down/500": 2 * 2}, // per round: gpt twice, the fallback, pooled twice; broken, flaky
			"upstream retries and fallbacks": {"up/fallback": 2},                   // labelled with the backend fallen back to
			"tool calls":                     {"clock/ok": 2},
			"tool durations":                 {"clock": 2},
			"tool cache lookups":             {}, // time_now is not cached
			"tool loops":                     {"": 2},
			"tool loop iterations":           {"": 2 * 2}, // per loop: the tool call turn and the answer turn
			"config reloads":                 {"success": 1, "failure": 1},
			"in flight":                      {"": 0},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Prometheus figures (-want +got):\n%s", diff)
		}
	})

	t.Run("every series as the gateway has it", func(t *testing.T) {
		got := map[string]float64{}
		samples, err := prom.queryAt(t, `{__name__=~"gateway_.+"}`, scraped)
		if err != nil {
			t.Fatal(err)
		}
		for _, smp := range samples {
			delete(smp.Metric, "job")
			delete(smp.Metric, "instance")
			got[seriesKey(smp.Metric)] = smp.Value
		}
		want := registrySeries(t, g.reg)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Prometheus's gateway_* series against the gateway's registry (-want +got):\n%s", diff)
		}
	})

	t.Run("every alert rule evaluates", func(t *testing.T) {
		type ruleState struct {
			Name           string    `json:"name"`
			Health         string    `json:"health"`
			LastError      string    `json:"lastError"`
			LastEvaluation time.Time `json:"lastEvaluation"`
		}
		var states []ruleState
		poll(t, "every rule evaluated after the traffic", func() (bool, string) {
			data, err := prom.get(t, "/api/v1/rules", nil)
			if err != nil {
				return false, err.Error()
			}
			var r struct {
				Groups []struct {
					Rules []ruleState `json:"rules"`
				} `json:"groups"`
			}
			if err := json.Unmarshal(data, &r); err != nil {
				return false, err.Error()
			}
			states = nil
			for _, g := range r.Groups {
				states = append(states, g.Rules...)
			}
			for _, st := range states {
				if float64(st.LastEvaluation.UnixMilli())/1000 <= settled {
					return false, fmt.Sprintf("%s last evaluated at %v", st.Name, st.LastEvaluation)
				}
			}
			return len(states) > 0, fmt.Sprintf("%d rules", len(states))
		})
		var names []string
		for _, st := range states {
			names = append(names, st.Name)
			if st.Health != "ok" || st.LastError != "" {
				t.Errorf("rule %s: health %q, error %q", st.Name, st.Health, st.LastError)
			}
		}
		var want []string
		for _, r := range loadRules(t) {
			want = append(want, r.Alert)
		}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("rules Prometheus loaded (-want +got):\n%s", diff)
		}
	})

	t.Run("the alerts the traffic calls for", func(t *testing.T) {
		// Every request for "broken" and every attempt on backend "down" failed, and one
		// reload failed: those alerts are pending (their for: has not passed) or firing
		// (no for:); nothing else is active.
		want := map[string]string{
			`AgateHighErrorRatio{model="broken"}`:       "pending",
			`AgateErrorRatioCritical{model="broken"}`:   "pending",
			`AgateUpstreamFailures{backend="down"}`:     "pending",
			`AgateConfigReloadFailed{result="failure"}`: "firing",
		}
		var got map[string]string
		poll(t, "the expected alerts", func() (bool, string) {
			data, err := prom.get(t, "/api/v1/alerts", nil)
			if err != nil {
				return false, err.Error()
			}
			var r struct {
				Alerts []struct {
					Labels map[string]string `json:"labels"`
					State  string            `json:"state"`
				} `json:"alerts"`
			}
			if err := json.Unmarshal(data, &r); err != nil {
				return false, err.Error()
			}
			got = map[string]string{}
			for _, a := range r.Alerts {
				name := a.Labels["alertname"]
				for _, l := range []string{"alertname", "severity", "job", "instance"} {
					delete(a.Labels, l)
				}
				got[name+seriesSelector(a.Labels)] = a.State
			}
			return cmp.Equal(want, got), cmp.Diff(want, got)
		})
	})

	t.Run("every dashboard query runs", func(t *testing.T) {
		exprs := dashboardExprs(t, loadDashboard(t))
		var empty []string
		for _, e := range exprs {
			// At the time of the last scrape, so that the rates see both rounds
			// however long the steps above took.
			samples, err := prom.queryAt(t, e.expr, scraped)
			if err != nil {
				t.Errorf("%s: %s: %v", e.where, e.expr, err)
				continue
			}
			hasData := false
			for _, smp := range samples {
				hasData = hasData || !math.IsNaN(smp.Value)
			}
			if !hasData {
				empty = append(empty, e.where)
			}
		}
		// Everything shows data but what the traffic does not exercise.
		want := []string{
			`panel "Answers charged an estimate by model" A`, // the upstream reports every answer's usage
			`panel "Dropped parameters" A`,                   // no backend drops parameters here
			`panel "Dropped parameters" B`,                   // no client sends anthropic-beta here
			`panel "Fallbacks skipped by key allowlist" A`,   // every key may use every fallback
			`panel "Tool cache hit ratio" A`,                 // time_now is not cached: no lookups
			`panel "Connections refused" A`,                  // no connection cap is reached
			`panel "Rate-limit rejections" A`,                // no key or model has limits here
			`panel "Budget remaining" A`,                     // no key has a budget
			`panel "Budget remaining" B`,                     // no team has a budget
			`panel "Shared state errors" A`,                  // state is in memory
			`panel "Usage ledger writer CPU" A`,              // no ledger here: no record written, 0/0
		}
		if diff := cmp.Diff(want, empty); diff != "" {
			t.Errorf("dashboard queries without data (-want +got):\n%s", diff)
		}
	})
}

// waitForScrape waits until the gateway's registry has counted requests requests with
// none in flight (it records some figures after the client has its response), then until
// Prometheus has scraped it successfully after that. It returns the time the registry settled, in
// Unix seconds, and the time of that scrape.
func waitForScrape(t *testing.T, g *e2eGateway, prom *promServer, requests float64) (settled, scraped float64) {
	t.Helper()
	poll(t, "the gateway's registry to count every request", func() (bool, string) {
		n, inflight := gathered(t, g.reg, "gateway_requests_total"), gathered(t, g.reg, "gateway_inflight_requests")
		return n == requests && inflight == 0, fmt.Sprintf("%v requests, %v in flight", n, inflight)
	})
	settled = float64(time.Now().UnixMilli()) / 1000
	poll(t, "a successful scrape after the traffic", func() (bool, string) {
		// timestamp() of a bare selector is the time of the sample, i.e. of the scrape
		// (of any other expression, the evaluation time). Both are read at one
		// evaluation time, so they are the same scrape's; a scrape that failed (up 0:
		// a loaded machine misses the 1 s scrape timeout) wrote staleness markers, and
		// the series read at its time would be empty.
		at := float64(time.Now().UnixMilli()) / 1000
		ts, err := prom.queryAt(t, `timestamp(up{job="agate"})`, at)
		if err != nil || len(ts) != 1 {
			return false, fmt.Sprintf("%v %v", ts, err)
		}
		up, err := prom.queryAt(t, `up{job="agate"}`, at)
		if err != nil || len(up) != 1 {
			return false, fmt.Sprintf("%v %v", up, err)
		}
		scraped = ts[0].Value
		return scraped > settled && up[0].Value == 1, fmt.Sprintf("last scrape at %v (up %v), traffic settled at %v", scraped, up[0].Value, settled)
	})
	return settled, scraped
}

// gathered sums the counter or gauge values of the named family in reg.
func gathered(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return total
}

// registrySeries flattens the gateway_* families of reg into the series Prometheus
// stores, keyed by seriesKey.
func registrySeries(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "gateway_") {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := func(extra ...string) map[string]string {
				l := map[string]string{}
				for _, p := range m.GetLabel() {
					if p.GetValue() != "" { // Prometheus drops empty labels
						l[p.GetName()] = p.GetValue()
					}
				}
				for i := 0; i+1 < len(extra); i += 2 {
					l[extra[i]] = extra[i+1]
				}
				return l
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[seriesKey(labels("__name__", f.GetName()))] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[seriesKey(labels("__name__", f.GetName()))] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[seriesKey(labels("__name__", f.GetName()+"_count"))] = float64(h.GetSampleCount())
				out[seriesKey(labels("__name__", f.GetName()+"_sum"))] = h.GetSampleSum()
				out[seriesKey(labels("__name__", f.GetName()+"_bucket", "le", "+Inf"))] = float64(h.GetSampleCount())
				for _, b := range h.GetBucket() {
					out[seriesKey(labels("__name__", f.GetName()+"_bucket", "le", fmt.Sprint(b.GetUpperBound())))] = float64(b.GetCumulativeCount())
				}
			default:
				t.Fatalf("%s: type %v unknown to this test", f.GetName(), f.GetType())
			}
		}
	}
	return out
}

// seriesSelector renders labels as a PromQL selector body in label order: {a="1",b="2"}.
func seriesSelector(labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for n := range labels {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s=%q", n, labels[n]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// seriesKey renders a label set in a canonical order; le values are normalised as
// numbers, since Prometheus versions differ in how they store them ("1" or "1.0").
func seriesKey(labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for n := range labels {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		v := labels[n]
		if n == "le" {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				v = strconv.FormatFloat(f, 'g', -1, 64)
			}
		}
		fmt.Fprintf(&b, "%s=%q ", n, v)
	}
	return b.String()
}
