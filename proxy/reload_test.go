package proxy

import (
	"context"
	"net/http"
	"testing"

	"github.com/agate-gateway/agate/config"
)

const reloadBefore = `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys: {alice: {key: sk-alice, models: ["*"]}}
`

const reloadAfter = `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}, fresh: {backend: offline}}
keys: {alice: {key: sk-alice, models: ["*"]}}
`

func TestApply(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startGateway(t, reloadBefore, nil)
	fresh := `{"model":"fresh","messages":[{"role":"user","content":"hi"}]}`
	if r := g.chat("sk-alice", fresh); r.status != 404 {
		t.Fatalf("fresh before reload: %d", r.status)
	}

	if err := g.srv.Apply(parseConfig(t, reloadAfter, nil)); err != nil {
		t.Fatalf("Apply(valid): %v", err)
	}
	if r := g.chat("sk-alice", fresh); r.status != 200 {
		t.Errorf("fresh after reload: %d %s", r.status, r.body)
	}

	// An invalid config (it did not go through validation) is rejected as a whole.
	bad := parseConfig(t, reloadAfter, nil)
	bad.Models["newer"] = config.Model{Backend: "offline"}
	bad.Backends["broken"] = config.Backend{Type: "carrier-pigeon"}
	if err := g.srv.Apply(bad); err == nil {
		t.Fatal("Apply(invalid) succeeded")
	}
	if r := g.chat("sk-alice", fresh); r.status != 200 {
		t.Errorf("after a rejected reload, fresh: %d", r.status)
	}
	if r := g.chat("sk-alice", `{"model":"newer","messages":[{"role":"user","content":"hi"}]}`); r.status != 404 {
		t.Errorf("a model of the rejected config is served: %d", r.status)
	}

	// A reload that removes a key takes effect for the next request.
	if err := g.srv.Apply(parseConfig(t, `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys: {bob: {key: sk-bob, models: ["*"]}}
`, nil)); err != nil {
		t.Fatal(err)
	}
	if r := g.chat("sk-alice", helloDemo); r.status != 401 {
		t.Errorf("removed key still accepted: %d", r.status)
	}
}

// TestApply_InFlightKeepsItsConfig: a stream that started before a reload finishes on the
// configuration it started with, even when the reload removes its model.
func TestApply_InFlightKeepsItsConfig(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	release := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: " + chunkJSON(`{"role":"assistant","content":"before"}`, "null") + "\n\n"))
		w.(http.Flusher).Flush()
		<-release
		w.Write([]byte("data: " + chunkJSON(`{"content":" after"}`, `"stop"`) + "\n\ndata: [DONE]\n\n"))
	})
	g := startGateway(t, streamConfig, map[string]string{"UP": up.v1()})
	client := g.client("")
	s := client.Chat.Completions.NewStreaming(context.Background(), userParams("gpt", "hi"))
	if !s.Next() {
		t.Fatal(s.Err())
	}
	content := s.Current().Choices[0].Delta.Content
	if err := g.srv.Apply(parseConfig(t, reloadBefore, nil)); err != nil {
		t.Fatal(err)
	}
	close(release)
	for s.Next() {
		if ch := s.Current(); len(ch.Choices) > 0 {
			content += ch.Choices[0].Delta.Content
		}
	}
	if err := s.Err(); err != nil || content != "before after" {
		t.Errorf("in-flight stream: content %q, error %v", content, err)
	}
	if r := g.chat("", `{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`); r.status != 401 {
		t.Errorf("after the reload (keys now required), a keyless request got %d", r.status)
	}
}
