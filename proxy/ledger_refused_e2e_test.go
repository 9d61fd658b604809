package proxy_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/ledger"
	"github.com/agate-gateway/agate/proxy"
)

// TestLedger_RefusedBeforeRouting: a request of a known key refused before it was routed
// (a malformed body, a model that does not exist, a model the key may not use) makes one
// record with the key, its team, the status and the error's type; a request without a
// known key makes none (a flood of bad keys cannot fill the database) but is counted in
// the rollups as status 401 with no key. The presented secret is kept nowhere.
func TestLedger_RefusedBeforeRouting(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	l, err := ledger.Open(context.Background(), ledger.Options{Type: "sqlite", DSN: sqliteLedgers.Fresh(t), FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	g := gatewaytest.StartYAML(t, `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}, secret-model: {backend: offline}}
keys: {alice: {key: sk-alice, models: [demo], team: eng}}
`, gatewaytest.Options{Runtime: proxy.TestRuntime, Ledger: l})
	ctx := context.Background()
	const badSecret = "sk-not-a-key-0123456789abcdef"
	ask := func(key, model string) error {
		c := gatewaytest.OpenAI(g.V1(), key)
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		return err
	}
	status := func(err error) int {
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			return apiErr.StatusCode
		}
		return 0
	}
	for i := range 3 {
		if got := status(ask(badSecret, "demo")); got != 401 {
			t.Fatalf("bad key %d: %d, want 401", i, got)
		}
	}
	req, _ := http.NewRequest("POST", g.V1()+"/chat/completions", nil) // no Authorization at all
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("no key: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	req, _ = http.NewRequest("POST", g.V1()+"/chat/completions", strings.NewReader(`{"model":"demo","messages":[{"role":"wizard","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer sk-alice")
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 400 {
		t.Fatalf("malformed body: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if got := status(ask("sk-alice", "no-such-model")); got != 404 {
		t.Fatalf("unknown model: %d, want 404", got)
	}
	if got := status(ask("sk-alice", "secret-model")); got != 404 {
		t.Fatalf("a model the key may not use: %d, want 404", got)
	}
	if err := ask("sk-alice", "demo"); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	recs, _, err := l.Requests(ctx, ledger.RequestQuery{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Key, Team, API, Model string
		Status                int
		ErrorType             string
	}
	var got []row
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		got = append(got, row{r.Key, r.Team, r.API, r.Model, r.Status, r.ErrorType})
		for _, s := range []string{r.Key, r.Team, r.Model, r.ErrorType, r.RequestID} {
			if strings.Contains(s, "not-a-key") || strings.Contains(s, "sk-alice") {
				t.Errorf("a record keeps a presented secret: %+v", r)
			}
		}
	}
	want := []row{
		{"alice", "eng", "chat", "", 400, "invalid_request_error"},
		{"alice", "eng", "chat", "unknown", 404, "invalid_request_error"},
		{"alice", "eng", "chat", "unknown", 404, "invalid_request_error"},
		{"alice", "eng", "chat", "demo", 200, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	now := time.Now()
	usage, err := l.Usage(ctx, ledger.UsageQuery{From: now.Add(-time.Hour), To: now.Add(time.Hour), GroupBy: []string{"key", "status"}})
	if err != nil {
		t.Fatal(err)
	}
	var unauth int64
	for _, u := range usage {
		if u.Key == "" && u.Status == 401 {
			unauth = u.Requests
		}
	}
	if unauth != 4 {
		t.Errorf("usage by key and status: %+v; want 4 requests of status 401 without a key", usage)
	}
}
