package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"

	"github.com/agate-gateway/agate/console"
	"github.com/agate-gateway/agate/internal/gatewaytest"
)

const adminToken = "console-admin-token-for-tests"

// xssModel and xssKey are a model's and a config key's names that would run script if a
// page put them in as HTML.
const (
	xssModel = `<img src=x onerror="window.__xss=1">`
	xssKey   = `<script>window.__xss=2</script>`
)

// consoleYAML is the gateway's config with the ledger ledgerYAML (sqliteLedger: a SQLite
// file).
func consoleYAML(ledgerYAML string) string {
	d := sha256.Sum256([]byte(adminToken))
	return fmt.Sprintf(`
backends: {offline: {type: mock}}
models:
  demo: {backend: offline, price: {input: 1, output: 2}}
  '%s': {backend: offline, upstream_model: echo, price: {input: 1, output: 2}}
keys:
  '%s': {key: sk-xss-config, models: ["*"]}
%s
admin:
  keys: {ops: {key_sha256: %s}}
  resync: 100ms
`, xssModel, xssKey, ledgerYAML, hex.EncodeToString(d[:]))
}

// sqliteLedger is the ledger: setting of a SQLite ledger in the file at path (most tests:
// sqliteLedgers.Fresh, a migrated copy).
func sqliteLedger(path string) string {
	return `ledger: {type: sqlite, path: ` + path + `, flush_interval: 20ms, spool_path: "off"}`
}

// chromium finds Debian's chromium; the test skips without it (fails under CI=true).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	gatewaytest.Missing(t, "no chromium on PATH for the console's browser tests", "apt-get install -y chromium")
	return ""
}

// browser is a headless Chromium tab for the test, with its screenshots directory
// (AGATE_CONSOLE_SCREENSHOTS; none when unset).
type browser struct {
	t    *testing.T
	ctx  context.Context
	shot string
}

// browsers is the Chromium this test binary's browser tests share: started by the first
// newBrowser, stopped by TestMain. Each test gets a browser context of its own in it (its
// own cookies and storage, as a new profile), so one Chromium start serves them all
// instead of one each (#54).
var browsers sharedBrowser

// sharedBrowser is one headless Chromium, started once.
type sharedBrowser struct {
	once   sync.Once
	ctx    context.Context // the browser's first tab; tests' contexts are its children
	cancel []context.CancelFunc
	err    error
}

// start starts Chromium (exe) the first time; later calls return the first's outcome.
func (s *sharedBrowser) start(exe string) (context.Context, error) {
	s.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
			chromedp.Flag("headless", "new"), chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true))
		actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel2 := chromedp.NewContext(actx)
		s.ctx, s.cancel = ctx, []context.CancelFunc{cancel2, cancel}
		// The browser lives as long as the context of its first Do: a start that takes
		// over 90 s is cancelled by a timer, not by a timeout on that context.
		slow := time.AfterFunc(90*time.Second, cancel2)
		defer slow.Stop()
		s.err = chromedp.Do(ctx)
	})
	return s.ctx, s.err
}

// stop closes the browser, if it was started.
func (s *sharedBrowser) stop() {
	for _, cancel := range s.cancel {
		cancel()
	}
}

func newBrowser(t *testing.T) *browser {
	exe := chromium(t)
	shared, err := browsers.start(exe)
	if err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	ctx, cancel := chromedp.NewContext(shared, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	ctx, cancel2 := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel2)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab in a new browser context: %v", err)
	}
	return &browser{t: t, ctx: ctx, shot: os.Getenv("AGATE_CONSOLE_SCREENSHOTS")}
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// until waits for the JavaScript expression cond to be true.
func (b *browser) until(what, cond string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		b.screenshot("failed")
		body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		b.t.Fatalf("waiting for %s: %v; the page says:\n%s", what, err, body)
	}
}

// eval returns the value of the JavaScript expression js (a promise's, awaited).
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

// screenshot saves the whole page as <name>.png in the screenshots directory.
func (b *browser) screenshot(name string) { b.capture(name, chromedp.FullScreenshot(100)) }

func (b *browser) capture(name string, shot chromedp.Action[[]byte]) {
	if b.shot == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(b.shot, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(b.shot, name+".png"), png, 0o644)
	}
}

func (b *browser) page(hash, ready string) {
	b.t.Helper()
	eval[any](b, `location.hash = '`+hash+`'`)
	b.until(hash, ready)
}

// adminGet reads an admin API route with the bearer token.
func adminGet(t *testing.T, g *gatewaytest.Gateway, path string, out any) {
	t.Helper()
	req, _ := http.NewRequest("GET", g.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, raw)
	}
}

type record struct {
	Model            string  `json:"model"`
	Status           int     `json:"status"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	CostUSD          float64 `json:"cost_usd"`
}

// waitRecords waits for the ledger to hold n records of key and returns them, newest
// first.
func waitRecords(t *testing.T, g *gatewaytest.Gateway, key string, n int) []record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var page struct{ Data []record }
		adminGet(t, g, "/admin/v1/requests?key="+key, &page)
		if len(page.Data) >= n {
			return page.Data
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ledger holds %d records of %s, want %d", len(page.Data), key, n)
		}
		time.Sleep(20 * time.Millisecond) // polling the ledger's flush, not timing the test
	}
}

// TestConsole_Browser drives the console in headless Chromium against a real gateway
// with a real ledger, SQLite and PostgreSQL (ledger/pgtest): sign in; create a key and read its secret once; traffic with
// it through openai-go shows in Requests with its tokens and cost and moves the
// Overview; the Playground streams the mock model's answer; a budget set on the Keys
// page refuses the next request; names that are HTML render as text; a change without
// the CSRF token is refused; every page is under the strict CSP.
func TestConsole_Browser(t *testing.T) {
	// The two run at once (#54): each has its own browser, gateway and ledger; screenshots
	// are taken one ledger after the other, as both write the same files.
	parallel := func(t *testing.T) {
		if os.Getenv("AGATE_CONSOLE_SCREENSHOTS") == "" {
			t.Parallel()
		}
	}
	t.Run("sqlite", func(t *testing.T) { parallel(t); consoleBrowser(t, sqliteLedger(sqliteLedgers.Fresh(t))) })
	t.Run("postgres", func(t *testing.T) {
		parallel(t)
		url := postgres.NewDatabase(t)
		consoleBrowser(t, `ledger: {type: postgres, url: "`+url+`", flush_interval: 20ms, spool_path: "off"}`)
	})
}

func consoleBrowser(t *testing.T, ledgerYAML string) {
	b := newBrowser(t)
	g := gatewaytest.StartYAML(t, consoleYAML(ledgerYAML), gatewaytest.Options{})
	ctx := context.Background()

	// The CSP and the other headers, on the page and on an asset.
	for _, p := range []string{"/console/", "/console/js/app.js"} {
		resp, err := http.Get(g.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Content-Security-Policy"); got != console.CSP {
			t.Errorf("%s: Content-Security-Policy %q, want %q", p, got, console.CSP)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", p, resp.Header)
		}
	}

	// Sign in: a client key is refused, the admin token signs in.
	b.do("opening the console", chromedp.Navigate(g.URL+"/console/"))
	b.until("the sign-in form", `!!document.querySelector('form.signin input[name=token]')`)
	// Every page after this one is reached without a reload: a CSP violation anywhere is
	// counted here.
	eval[any](b, `window.__csp = []; document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI)); null`)
	b.screenshot("signin")
	b.do("a client key", chromedp.SendKeys(chromedp.CSS(`input[name=token]`), "sk-xss-config"), chromedp.Click(chromedp.CSS(`form.signin button`)))
	b.until("the refusal", `document.querySelector('form.signin .error')?.textContent.includes('not an admin token')`)
	b.do("signing in", chromedp.SendKeys(chromedp.CSS(`input[name=token]`), adminToken), chromedp.Click(chromedp.CSS(`form.signin button`)))
	b.until("the overview", `!!document.querySelector('[data-page=overview] .cards .card')`)
	cookieJS := eval[string](b, `document.cookie`)
	if strings.Contains(cookieJS, console.CookieName) {
		t.Errorf("the session cookie is readable by script: %q", cookieJS)
	}

	// Create a key; its secret is shown once.
	b.page("#/keys", `!!document.querySelector('[data-page=keys] table')`)
	b.do("create", chromedp.Click(chromedp.Search(`//button[text()='Create key']`)))
	b.do("filling the form", chromedp.SendKeys(chromedp.CSS(`form.form input[name=name]`), "ci-key"),
		chromedp.SendKeys(chromedp.CSS(`form.form input[name=models]`), "*"),
		chromedp.SendKeys(chromedp.CSS(`form.form input[name=team]`), "<b>research</b>"),
		chromedp.Click(chromedp.CSS(`form.form button[type=submit]`)))
	b.until("the secret", `!!document.querySelector('input.secret')`)
	secret := eval[string](b, `document.querySelector('input.secret').value`)
	if !strings.HasPrefix(secret, "agk_") {
		t.Fatalf("the secret shown: %q", secret)
	}
	if got := b.text(`.panel h2`); got != "Key ci-key created" {
		t.Errorf("the secret's panel says %q", got)
	}
	b.screenshot("keys-created")
	b.page("#/overview", `!!document.querySelector('[data-page=overview] .cards .card')`)
	b.page("#/keys", `!!document.querySelector('[data-page=keys] table') && document.body.innerText.includes('ci-key')`)
	html := eval[string](b, `document.documentElement.outerHTML`)
	if strings.Contains(html, secret) || strings.Contains(html, secret[4:]) {
		t.Error("the keys page shows the secret again")
	}

	// Traffic with the new key: two answers to demo (one streamed) and one to the model
	// whose name is HTML.
	c := gatewaytest.OpenAI(g.V1(), secret)
	user := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("how are the tides today")}
	answer, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "demo", Messages: user})
	if err != nil {
		t.Fatal(err)
	}
	st := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "demo", Messages: user})
	for st.Next() {
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: xssModel, Messages: user}); err != nil {
		t.Fatal(err)
	}
	recs := waitRecords(t, g, "ci-key", 3)

	// Requests: the non-streamed answer's record, with its tokens and cost.
	b.page("#/requests", `document.querySelectorAll('[data-page=requests] tbody tr').length >= 3`)
	last := recs[2] // the oldest: the first request
	if last.PromptTokens != answer.Usage.PromptTokens || last.CompletionTokens != answer.Usage.CompletionTokens {
		t.Errorf("ledger record %+v, usage answered %+v", last, answer.Usage)
	}
	wantCost := (float64(answer.Usage.PromptTokens)*1 + float64(answer.Usage.CompletionTokens)*2) / 1e6
	if diff := last.CostUSD - wantCost; diff > 1e-12 || diff < -1e-12 {
		t.Errorf("cost %v, want %v", last.CostUSD, wantCost)
	}
	row := b.text(`[data-page=requests] tbody tr:last-child`)
	if want := fmt.Sprintf("%d / %d", answer.Usage.PromptTokens, answer.Usage.CompletionTokens); !strings.Contains(row, want) || !strings.Contains(row, "demo") {
		t.Errorf("the first request's row %q lacks %q", row, want)
	}
	b.do("the detail", chromedp.Click(chromedp.CSS(`[data-page=requests] tbody tr:last-child`)))
	// The detail shows the listing's fields at once and is drawn again with the record's
	// attempts (GET /admin/v1/requests/{id}): read it once that second drawing is there.
	b.until("the detail", `!!document.querySelector('.detail .attempts')`)
	detail := b.text(`.detail dl`)
	if !strings.Contains(detail, "$0.0000") || !strings.Contains(detail, "Completion tokens") {
		t.Errorf("detail: %q", detail)
	}
	b.screenshot("requests")
	// Names that are HTML show as text and run nothing.
	xss := eval[any](b, `window.__xss === undefined ? null : window.__xss`)
	if xss != nil || !strings.Contains(b.text(`[data-page=requests] tbody`), xssModel) {
		t.Errorf("the model name ran as HTML (%v) or is not shown as text", xss)
	}
	b.page("#/keys", `document.body.innerText.includes('ci-key')`)
	keysText := b.text(`[data-page=keys] table`)
	if teams := b.text(`[data-page=keys] table:nth-of-type(2)`); !strings.Contains(teams, "<b>research</b>") || !strings.Contains(teams, "ci-key") {
		t.Errorf("the teams table: %q", teams)
	}
	xss = eval[any](b, `window.__xss === undefined ? null : window.__xss`)
	if xss != nil || !strings.Contains(keysText, xssKey) || !strings.Contains(keysText, "<b>research</b>") {
		t.Errorf("a key's name or team ran as HTML (%v) or is not shown as text: %q", xss, keysText)
	}

	// Overview: three requests, then a fourth after a refresh.
	b.page("#/overview", `document.querySelector('[data-metric=requests] .value')?.textContent === '3'`)
	charts := eval[int](b, `document.querySelectorAll('.uplot').length`)
	if charts != 3 {
		t.Errorf("%d charts on the overview, want 3", charts)
	}
	b.screenshot("overview")
	if _, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "demo", Messages: user}); err != nil {
		t.Fatal(err)
	}
	waitRecords(t, g, "ci-key", 4)
	b.do("refresh", chromedp.Click(chromedp.CSS(`#refresh`)))
	b.until("the overview to count the fourth request", `document.querySelector('[data-metric=requests] .value')?.textContent === '4'`)

	// Playground: a streamed answer from the mock model with the key's secret.
	b.page("#/playground", `!!document.querySelector('[data-page=playground] form')`)
	b.do("chatting", chromedp.SendKeys(chromedp.CSS(`input[name=key]`), secret),
		chromedp.SetValue(chromedp.CSS(`select[name=model]`), "demo"),
		chromedp.SendKeys(chromedp.CSS(`textarea[name=prompt]`), "hello from the playground"),
		chromedp.Click(chromedp.Search(`//button[text()='Send']`)))
	b.until("the answer", `!!document.querySelector('.stats[data-done]')`)
	if got, stats := b.text(`.msg.assistant .answer`), b.text(`.stats`); !strings.Contains(got, "hello from the playground") || !strings.Contains(stats, "out tokens") || !strings.Contains(stats, "$") {
		t.Errorf("playground answer %q, stats %q", got, stats)
	}
	b.screenshot("playground")

	// Dark and light follow prefers-color-scheme.
	for _, scheme := range []struct{ name, bg string }{{"dark", "rgb(17, 19, 24)"}, {"light", "rgb(255, 255, 255)"}} {
		b.do("emulating "+scheme.name, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme.name}}})
			return err
		}))
		if bg := eval[string](b, `getComputedStyle(document.body).backgroundColor`); bg != scheme.bg {
			t.Errorf("%s: background %s, want %s", scheme.name, bg, scheme.bg)
		}
		if scheme.name == "dark" {
			b.screenshot("playground-dark")
		}
	}

	// Models and Usage render.
	b.page("#/models", `document.body.innerText.includes('closed')`)
	b.screenshot("models")
	b.page("#/usage", `!!document.querySelector('[data-page=usage] table') && document.body.innerText.includes('ci-key')`)
	b.screenshot("usage")

	// CSRF: a change from the page's origin without the session's token is refused.
	status := eval[int](b, `fetch('/admin/v1/keys', {method: 'POST', credentials: 'same-origin', headers: {'Content-Type': 'application/json'}, body: '{"name":"evil"}'}).then(r => r.status)`)
	if status != 403 {
		t.Errorf("a POST without the CSRF token: %d, want 403", status)
	}
	status = eval[int](b, `fetch('/admin/v1/keys', {method: 'POST', credentials: 'same-origin', headers: {'Content-Type': 'application/json', 'X-CSRF-Token': 'forged'}, body: '{"name":"evil"}'}).then(r => r.status)`)
	if status != 403 {
		t.Errorf("a POST with a forged CSRF token: %d, want 403", status)
	}

	// A budget set on the Keys page refuses the next request.
	b.page("#/keys", `document.body.innerText.includes('ci-key')`)
	b.do("edit", chromedp.Click(chromedp.CSS(`button[aria-label="Edit ci-key"]`)))
	b.do("budget", chromedp.SendKeys(chromedp.CSS(`form.form input[name=budget_usd]`), "0.000001"),
		chromedp.Click(chromedp.CSS(`form.form button[type=submit]`)))
	b.until("the saved budget", `document.body.innerText.includes('/ $0.000001')`)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "demo", Messages: user})
		var apiErr *openai.Error
		if errors.As(err, &apiErr) && apiErr.StatusCode == 429 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the request after the budget change: %v", err)
		}
	}

	// Requests, errors only: the refused request, with its status.
	waitRecords(t, g, "ci-key&errors=true", 1)
	b.page("#/requests", `!!document.querySelector('[data-page=requests] tbody tr')`)
	b.do("errors only", chromedp.Click(chromedp.CSS(`input[name=errors]`)), chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
	b.until("the failed requests only", `[...document.querySelectorAll('[data-page=requests] tbody tr')].every(tr => tr.textContent.includes('429'))`)
	if rows := eval[int](b, `document.querySelectorAll('[data-page=requests] tbody tr').length`); rows < 1 {
		t.Error("errors only lists no request")
	}
	if v := eval[[]string](b, `window.__csp`); len(v) > 0 {
		t.Errorf("CSP violations: %q", v)
	}

	// Sign out: the session no longer reads the API.
	b.do("sign out", chromedp.Click(chromedp.CSS(`#signout`)))
	b.until("the sign-in form", `!!document.querySelector('form.signin')`)
	status = eval[int](b, `fetch('/admin/v1/keys', {credentials: 'same-origin'}).then(r => r.status)`)
	if status != 401 {
		t.Errorf("after sign-out: %d, want 401", status)
	}
}
