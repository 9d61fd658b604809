package proxy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// codexWebsocket is the provider setting that makes Codex open the Responses API over a
// WebSocket first (model_providers.<id>.supports_websockets; Codex 0.169 needs no feature
// flag besides). Codex then sends a warm-up (response.create with generate: false) and
// each turn as a response.create chained to the previous response by id.
var codexWebsocket = []string{"-c", "model_providers.agate.supports_websockets=true"}

// TestCodex_Websocket: Codex with supports_websockets runs its turns over the gateway's
// WebSocket, checked on the server: every model call is a WebSocket turn
// (gateway_websocket_messages_total{outcome="turn"}), on the mock and, with a call of
// Codex's exec_command and the answer to its output, on a fake upstream of every wire.
// With the mode off, the 426 makes it fall back to HTTP at once and answer all the same.
func TestCodex_Websocket(t *testing.T) {
	t.Parallel() // its own gateway, fake and codex process (#54)
	bin := codexBinary(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte(noteContent+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ups := gatewaytest.Fleet(func(kind string) *gatewaytest.Fake { return newCodexUpstream(t, kind) })
	g := gatewaytest.StartYAML(t, fleetConfig(ups), gatewaytest.Options{Runtime: proxy.TestRuntime})
	messages := func(g *gatewaytest.Gateway, outcome string) float64 {
		return testutil.ToFloat64(g.Metrics.Websocket.Turns.WithLabelValues(outcome))
	}
	flags := func(kind string) []string {
		if kind == "responses" {
			return codexWebsocket
		}
		return append(append([]string(nil), codexNoWebSearch...), codexWebsocket...)
	}
	t.Run("mock/one turn", func(t *testing.T) {
		turns, warmups := messages(g, "turn"), messages(g, "warmup")
		got, out, err := execCodex(t, bin, g.URL, "m-mock", dir, "say hello", flags("mock")...)
		if err != nil || !strings.Contains(got, "say hello") {
			t.Fatalf("codex: %v, last message %q\n%s", err, got, out)
		}
		if n, w := messages(g, "turn")-turns, messages(g, "warmup")-warmups; n != 1 || w != 1 {
			t.Errorf("%v turns and %v warm-ups over the WebSocket, want 1 and 1\n%s", n, w, out)
		}
	})
	for _, k := range gatewaytest.Kinds {
		t.Run(k+"/exec_command", func(t *testing.T) {
			u := ups[k]
			before, turns := len(u.Bodies()), messages(g, "turn")
			got, out, err := execCodex(t, bin, g.URL, "m-"+k, dir, "read the note", flags(k)...)
			if err != nil || !strings.Contains(got, "the note says "+noteContent) {
				t.Fatalf("codex: %v, last message %q\n%s", err, got, out)
			}
			calls, n := len(u.Bodies())-before, messages(g, "turn")-turns
			if calls != 2 || n != 2 {
				t.Errorf("%d upstream requests from %v WebSocket turns, want 2 from 2", calls, n)
			}
		})
	}
	t.Run("off/falls back to HTTP", func(t *testing.T) {
		off := gatewaytest.StartYAML(t, "backends: {offline: {type: mock}}\nmodels: {m-mock: {backend: offline}}\n"+
			"keys: {client: {key: client-key, models: [\"*\"]}}\nresponses_websocket: {enabled: false}\n", gatewaytest.Options{Runtime: proxy.TestRuntime})
		start := time.Now()
		got, out, err := execCodex(t, bin, off.URL, "m-mock", dir, "say hello", flags("mock")...)
		if err != nil || !strings.Contains(got, "say hello") {
			t.Fatalf("codex: %v, last message %q\n%s", err, got, out)
		}
		refused := testutil.ToFloat64(off.Metrics.Websocket.Upgrades.WithLabelValues("disabled"))
		if refused < 1 || messages(off, "turn") != 0 {
			t.Errorf("%v upgrades answered 426, %v WebSocket turns", refused, messages(off, "turn"))
		}
		t.Logf("codex answered over HTTP after the 426 in %v", time.Since(start))
	})
}
