package console_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/ledger"
)

// TestConsole_Screenshots makes the documentation's screenshots (docs/img/console-*.png)
// of a console over an hour of synthetic traffic: it runs only with
// AGATE_CONSOLE_SCREENSHOTS=<dir>, where it writes them.
func TestConsole_Screenshots(t *testing.T) {
	dir := os.Getenv("AGATE_CONSOLE_SCREENSHOTS")
	if dir == "" {
		t.Skip("set AGATE_CONSOLE_SCREENSHOTS=<dir> to make the console's screenshots")
	}
	b := newBrowser(t)
	path := filepath.Join(t.TempDir(), "ledger.db")
	seedLedger(t, path, time.Now())
	g := gatewaytest.StartYAML(t, consoleYAML(sqliteLedger(path)), gatewaytest.Options{})

	b.do("opening the console", chromedp.Navigate(g.URL+"/console/"))
	b.until("the sign-in form", `!!document.querySelector('form.signin input[name=token]')`)
	b.do("signing in", chromedp.SendKeys(chromedp.CSS(`input[name=token]`), adminToken), chromedp.Click(chromedp.CSS(`form.signin button`)))
	b.until("the overview", `document.querySelectorAll('.uplot').length === 3 && document.querySelectorAll('.tops tbody tr').length > 3`)
	b.shot = dir
	b.screenshot("console-overview")
	b.page("#/requests", `document.querySelectorAll('[data-page=requests] tbody tr').length >= 10`)
	b.do("a detail", chromedp.Click(chromedp.CSS(`[data-page=requests] tbody tr:nth-child(3)`)))
	b.until("the detail", `!!document.querySelector('.detail dl')`)
	b.capture("console-requests", chromedp.CaptureScreenshot()) // the viewport: the detail and the first rows
}

// seedLedger writes an hour of traffic before now into the SQLite ledger at path: three
// keys, three models, a wave of load, some 429s and 502s.
func seedLedger(t *testing.T, path string, now time.Time) {
	ctx := context.Background()
	l, err := ledger.Open(ctx, ledger.Options{Type: "sqlite", DSN: path, FlushInterval: 10 * time.Millisecond, SpoolPath: "off"})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 52))
	keys := []string{"research-ci", "support-bot", "batch-eval"}
	models := []struct {
		name      string
		in, out   float64 // USD per million tokens
		latencyMS int
	}{{"claude-sonnet", 3, 15, 2400}, {"gpt-4.1", 2, 8, 1800}, {"gemini-flash", 0.3, 2.5, 700}}
	n := 0
	for s := 3600; s > 0; s -= 2 {
		rate := 1 + math.Sin(float64(s)/600)*0.8 // requests every 2 s, in a wave
		for range int(rate*2 + rng.Float64()) {
			k, m := rng.IntN(len(keys)), models[rng.IntN(len(models))]
			status, etype := 200, ""
			switch r := rng.IntN(100); {
			case r < 3:
				status, etype = 429, "rate_limit_exceeded"
			case r < 5:
				status, etype = 502, "upstream_error"
			}
			in, out := int64(500+rng.IntN(6000)), int64(50+rng.IntN(900))
			if status != 200 {
				out = 0
			}
			total := time.Duration(m.latencyMS/2+rng.IntN(m.latencyMS)) * time.Millisecond
			l.Add(ledger.Record{Time: now.Add(-time.Duration(s) * time.Second), RequestID: fmt.Sprintf("req_%08d", n),
				Key: keys[k], Team: []string{"research", "support", "research"}[k], API: "chat", Model: m.name, Served: m.name,
				Backend: "upstream", Stream: n%2 == 0, Status: status, ErrorType: etype, PromptTokens: in, CompletionTokens: out,
				CostUSD: (float64(in)*m.in + float64(out)*m.out) / 1e6, Total: total, FirstToken: total / 4, Upstream: total / 5})
			n++
		}
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
