package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agate-gateway/agate/internal/gatewaytest"
)

const baseConfig = `
server: {listen: "127.0.0.1:0", shutdown_timeout: 5s}
log: {level: debug}
backends: {offline: {type: mock}}
models:
  demo: {backend: offline}
`

// writeAtomically replaces the file the way careful editors and config managers do, so the
// watcher never reads a half-written file.
func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func post(t *testing.T, addr, model string) int {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func reloads(t *testing.T, addr, result string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range fams["gateway_config_reloads_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "result" && l.GetValue() == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runningGateway is a run of the gateway that startRun began.
type runningGateway struct {
	addr           string // where it serves
	stdout, stderr *gatewaytest.Buffer
	done           chan error
}

// startRun runs the gateway with args and environ and waits until it serves. SIGTERM is
// caught for the whole test, so that the signal stop sends can never kill the test
// binary, even if it arrived after run stopped listening for it.
func startRun(t *testing.T, args, environ []string) *runningGateway {
	t.Helper()
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, syscall.SIGTERM)
	t.Cleanup(func() { signal.Stop(guard) })
	g := &runningGateway{stdout: &gatewaytest.Buffer{}, stderr: &gatewaytest.Buffer{}, done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() { g.done <- run(args, environ, g.stdout, g.stderr, ready) }()
	select {
	case g.addr = <-ready:
	case err := <-g.done:
		t.Fatalf("run returned before serving: %v\n%s", err, g.stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatal("run did not become ready")
	}
	return g
}

// stop sends SIGTERM and waits for run to return, without an error.
func (g *runningGateway) stop(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-g.done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not stop on SIGTERM")
	}
}

// TestRun_ReloadAndShutdown runs the binary's main logic on a temporary config file: a
// valid edit is served, an invalid one is kept out and counted, SIGTERM stops it cleanly.
func TestRun_ReloadAndShutdown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agate.yaml")
	writeAtomically(t, path, baseConfig)
	g := startRun(t, []string{"-config", path}, nil)

	if got := post(t, g.addr, "demo"); got != 200 {
		t.Fatalf("demo: %d", got)
	}
	if got := post(t, g.addr, "fresh"); got != 404 {
		t.Fatalf("fresh before the edit: %d", got)
	}

	// A valid edit is applied.
	writeAtomically(t, path, baseConfig+"  fresh: {backend: offline}\n")
	eventually(t, "the new model to be served", func() bool { return post(t, g.addr, "fresh") == 200 })
	eventually(t, "the reload to be counted", func() bool { return reloads(t, g.addr, "success") == 1 })
	// One edit is one reload: one log line, one count. Log lines are written in batches, a
	// moment after they are logged.
	eventually(t, "the reload in the log", func() bool { return strings.Contains(g.stderr.String(), `"msg":"config reloaded"`) })
	if got := strings.Count(g.stderr.String(), `"msg":"config reloaded"`); got != 1 {
		t.Errorf("one edit logged %d reloads, want 1:\n%s", got, g.stderr.String())
	}

	// An invalid edit (an unknown key) is rejected, counted, and the running config kept.
	writeAtomically(t, path, baseConfig+"  fresh: {backend: offline, upstream_modle: typo}\n")
	eventually(t, "the failed reload to be counted", func() bool { return reloads(t, g.addr, "failure") == 1 })
	if got := post(t, g.addr, "fresh"); got != 200 {
		t.Errorf("after a rejected edit, fresh: %d", got)
	}
	if got := reloads(t, g.addr, "success"); got != 1 {
		t.Errorf("successful reloads = %v, want still 1", got)
	}
	eventually(t, "the failed reload in the log", func() bool { return strings.Contains(g.stderr.String(), `"msg":"config reload failed`) })
	if !strings.Contains(g.stderr.String(), "upstream_modle") {
		t.Errorf("the log does not say why the reload failed:\n%s", g.stderr.String())
	}
	if got := strings.Count(g.stderr.String(), `"msg":"config reload failed`); got != 1 {
		t.Errorf("one invalid edit logged %d failures, want 1:\n%s", got, g.stderr.String())
	}

	g.stop(t)
	if !strings.Contains(g.stderr.String(), `"msg":"stopped"`) {
		t.Errorf("no clean stop in the log:\n%s", g.stderr.String())
	}
}

func TestRun_StartupErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(baseConfig+"  typo: {backend: offline, max_tokenz: 5}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		environ []string
		want    string // in the error, or in stdout when the error is nil
	}{
		{name: "version", args: []string{"-version"}, want: "agate"},
		{name: "unknown field", args: []string{"-config", bad}, want: "max_tokenz"},
		{name: "missing file", args: []string{"-config", filepath.Join(dir, "nope.yaml")}, want: "nope.yaml\": name one with -config"},
		{name: "missing default file", args: nil, want: "name one with -config <path> or GATEWAY_CONFIG"},
		{name: "GATEWAY_CONFIG", environ: []string{"GATEWAY_CONFIG=" + bad}, want: "max_tokenz"},
		{name: "unknown flag", args: []string{"-bogus"}, want: "bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr gatewaytest.Buffer
			err := run(tt.args, tt.environ, &stdout, &stderr, nil)
			got := stdout.String()
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("got %q (err %v), want it to mention %q", got, err, tt.want)
			}
		})
	}
}

// TestRun_MetricsListen: with metrics.listen set, /metrics is served on that address,
// behind metrics.bearer, and no longer on the main one.
func TestRun_MetricsListen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agate.yaml")
	writeAtomically(t, path, baseConfig+"metrics: {listen: \"127.0.0.1:0\", bearer: scrape-token}\n")
	g := startRun(t, []string{"-config", path}, nil)
	eventually(t, "the metrics address in the log", func() bool { return strings.Contains(g.stderr.String(), `"msg":"metrics listening"`) })
	var metricsAddr string
	for _, line := range strings.Split(g.stderr.String(), "\n") {
		if _, rest, ok := strings.Cut(line, `"msg":"metrics listening","addr":"`); ok {
			metricsAddr, _, _ = strings.Cut(rest, `"`)
		}
	}
	if metricsAddr == "" {
		t.Fatalf("no metrics address in the log:\n%s", g.stderr.String())
	}
	get := func(url, token string) int {
		req, _ := http.NewRequest("GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		url, token string
		want       int
	}{
		{"http://" + metricsAddr + "/metrics", "scrape-token", 200},
		{"http://" + metricsAddr + "/metrics", "", 401},
		{"http://" + g.addr + "/metrics", "scrape-token", 404},
	} {
		if got := get(c.url, c.token); got != c.want {
			t.Errorf("GET %s (token %q): %d, want %d", c.url, c.token, got, c.want)
		}
	}
	g.stop(t)
}

// TestRun_CPUProfile: -cpuprofile writes a CPU profile of the run when it stops (the
// input of gateway.pgo); a file that cannot be created stops the start.
func TestRun_CPUProfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agate.yaml")
	writeAtomically(t, path, baseConfig)
	if err := run([]string{"-config", path, "-cpuprofile", filepath.Join(dir, "absent", "cpu.pprof")}, nil, io.Discard, io.Discard, nil); err == nil || !strings.HasPrefix(err.Error(), "-cpuprofile: ") {
		t.Fatalf("an uncreatable profile: %v, want a -cpuprofile error", err)
	}

	profile := filepath.Join(dir, "cpu.pprof")
	g := startRun(t, []string{"-config", path, "-cpuprofile", profile}, nil)
	g.stop(t)
	// A pprof profile is a gzipped profile.proto message whose first field, sample_type,
	// names the CPU profile's values.
	f, err := os.Open(profile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("the profile is not gzipped: %v", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil || !bytes.Contains(b, []byte("nanoseconds")) || !bytes.Contains(b, []byte("cpu")) {
		t.Fatalf("the profile (%d bytes, %v) does not name the CPU samples", len(b), err)
	}
}

// TestRun_ReloadAppliesLogSettings: a reload applies log.level to the running logger, and
// names log.format, which it cannot apply, as needing a restart.
func TestRun_ReloadAppliesLogSettings(t *testing.T) {
	const models = `
backends: {offline: {type: mock}}
models:
  demo: {backend: offline}
`
	const server = `server: {listen: "127.0.0.1:0", shutdown_timeout: 5s}` + "\n"
	path := filepath.Join(t.TempDir(), "agate.yaml")
	writeAtomically(t, path, server+"log: {level: warn}\n"+models)
	g := startRun(t, []string{"-config", path}, nil)
	defer g.stop(t)

	// At warn, a request's access line (info) is not logged.
	if got := post(t, g.addr, "demo"); got != 200 {
		t.Fatalf("demo: %d", got)
	}
	time.Sleep(300 * time.Millisecond) // log lines are written in batches every 100 ms
	if strings.Contains(g.stderr.String(), `"msg":"chat completion"`) {
		t.Fatalf("an info line at level warn:\n%s", g.stderr.String())
	}

	writeAtomically(t, path, server+"log: {level: info}\n"+models)
	eventually(t, "the reload to be counted", func() bool { return reloads(t, g.addr, "success") == 1 })
	eventually(t, "the access line at level info", func() bool {
		post(t, g.addr, "demo")
		return strings.Contains(g.stderr.String(), `"msg":"chat completion"`)
	})
	if !strings.Contains(g.stderr.String(), `"msg":"config reload: log level changed","from":"warn","to":"info"`) {
		t.Errorf("the level change is not logged:\n%s", g.stderr.String())
	}

	writeAtomically(t, path, server+"log: {level: info, format: text}\n"+models)
	eventually(t, "the restart warning", func() bool {
		return strings.Contains(g.stderr.String(), `"msg":"config reload: these changes take effect after a restart","sections":["log.format"]`)
	})
}
