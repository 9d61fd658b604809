package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/limits/redistest"
)

// replica is one gateway process started from the built binary.
type replica struct {
	base   string
	logs   *gatewaytest.Buffer
	cmd    *exec.Cmd
	exited chan error
}

// startReplica runs the gateway binary on configPath and waits until it listens.
func startReplica(t *testing.T, bin, configPath string) *replica {
	t.Helper()
	return startReplicaWith(t, bin, []string{"-config", configPath}, append(os.Environ(), "ALICE_KEY=alice-secret"))
}

// startReplicaWith runs the gateway binary with args and exactly the environment env, and
// waits until it listens.
func startReplicaWith(t *testing.T, bin string, args, env []string) *replica {
	t.Helper()
	r := &replica{logs: &gatewaytest.Buffer{}, exited: make(chan error, 1)}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Env = env
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stdout = r.logs
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			r.logs.Write([]byte(sc.Text() + "\n"))
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "agate listening" {
				listening <- rec.Addr
			}
		}
		r.exited <- r.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.exited:
		case <-time.After(waitLimit):
			r.cmd.Process.Kill()
			<-r.exited
		}
	})
	select {
	case addr := <-listening:
		r.base = "http://" + addr
	case err := <-r.exited:
		t.Fatalf("the gateway exited before listening: %v\n%s", err, r.logs.String())
	case <-time.After(waitLimit):
		t.Fatalf("the gateway did not listen within %v\n%s", waitLimit, r.logs.String())
	}
	return r
}

func (r *replica) chat(t *testing.T, text string, stream bool) (int, http.Header) {
	t.Helper()
	body := fmt.Sprintf(`{"model":"demo","stream":%v,"messages":[{"role":"user","content":%q}]}`, stream, text)
	req, _ := http.NewRequest("POST", r.base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer alice-secret")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header
}

// TestReplicas_SharedLimits runs two gateway processes, built from this package, on one
// real redis-server: one requests_per_minute is enforced exactly across both, a token
// budget charged by one refuses on the other, a tool result cached by one is a hit on the
// other, a concurrency cap holds across both with streams, and with Redis killed requests
// are served (on_error allow) without waiting, /readyz says degraded, and limits hold
// again after a restart.
func TestReplicas_SharedLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	t.Parallel() // its own redis-server, replicas and hooks; the image's build is shared (#54)
	srv := redistest.Start(t)
	_, bin := imageBinary(t) // the image's build: one build of the module for every test that runs it
	var toolRuns atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		toolRuns.Add(1)
		io.WriteString(w, "sunny")
	}))
	defer hook.Close()

	// upstream is an OpenAI-compatible upstream whose streams for prompts containing
	// "hold" send a chunk every few milliseconds until released; others end at once.
	var held atomic.Int64
	release := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		chunk := func(delta, finish string) string {
			return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chunk(`{"role":"assistant","content":"x"}`, "null"))
		w.(http.Flusher).Flush()
		if strings.Contains(string(body), "hold") {
			held.Add(1)
			defer held.Add(-1)
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
		wait:
			for {
				select {
				case <-release:
					break wait
				case <-r.Context().Done():
					return
				case <-tick.C:
					io.WriteString(w, chunk(`{"content":"."}`, "null"))
					w.(http.Flusher).Flush()
				}
			}
		}
		io.WriteString(w, chunk(`{}`, `"stop"`)+`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`+"\n\ndata: [DONE]\n\n")
	}))
	defer upstream.Close()

	write := func(name, keys string) string {
		path := filepath.Join(t.TempDir(), name)
		cfg := fmt.Sprintf(`
server: {listen: "127.0.0.1:0", shutdown_timeout: 5s}
backends: {offline: {type: mock}, up: {type: openai, base_url: %q}}
models: {demo: {backend: offline}, up: {backend: up}}
keys:
  alice:
    key: ${ALICE_KEY}
    models: ["*"]
    tools: [weather]
%s
tools:
  weather: {type: http, url: %q, read_only: true}
cache: {scope: global}
state: {type: redis, url: %q, key_prefix: "%s:", timeout: 200ms}
`, upstream.URL+"/v1", keys, hook.URL, srv.URL(), name)
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	t.Run("requests_per_minute exact across two processes", func(t *testing.T) {
		path := write("rpm", "    limits: {requests_per_minute: 5}")
		a, b := startReplica(t, bin, path), startReplica(t, bin, path)
		replicas := []*replica{a, b}
		var got []string
		for i := range 5 {
			code, h := replicas[i%2].chat(t, "hi", i%2 == 1)
			got = append(got, fmt.Sprintf("%c:%d(remaining %s)", 'A'+i%2, code, h.Get("x-ratelimit-remaining-requests")))
			if code != 200 {
				t.Errorf("request %d: %d", i+1, code)
			}
		}
		for i, r := range replicas {
			code, h := r.chat(t, "hi", false)
			got = append(got, fmt.Sprintf("%c:%d(retry-after %s)", 'A'+i, code, h.Get("Retry-After")))
			if code != 429 {
				t.Errorf("replica %c after 5 requests: %d, want 429", 'A'+i, code)
			}
		}
		t.Logf("statuses: %s", strings.Join(got, " "))
	})

	t.Run("token budget charged by one refuses on the other", func(t *testing.T) {
		path := write("budget", "    budget: {tokens: 10}")
		a, b := startReplica(t, bin, path), startReplica(t, bin, path)
		if code, _ := a.chat(t, "one two three four five", false); code != 200 {
			t.Fatalf("first request on A: %d", code)
		}
		client := gatewaytest.OpenAI(b.base+"/v1/", "alice-secret")
		_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "demo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "insufficient_quota" {
			t.Fatalf("B after A spent the budget: %v", err)
		}
		t.Logf("B: %d %s: %s", apiErr.StatusCode, apiErr.Code, apiErr.Message)
	})

	t.Run("tool result cached by one is a hit on the other", func(t *testing.T) {
		path := write("tools", "")
		a, b := startReplica(t, bin, path), startReplica(t, bin, path)
		for _, r := range []*replica{a, b} {
			if code, _ := r.chat(t, "ask weather", false); code != 200 {
				t.Fatalf("tool loop request: %d\n%s", code, r.logs.String())
			}
		}
		if n := toolRuns.Load(); n != 1 {
			t.Errorf("the tool ran %d times across two replicas, want 1", n)
		}
		t.Logf("tool ran %d time(s) for two requests on two replicas", toolRuns.Load())
	})

	t.Run("concurrency cap across two processes with streams", func(t *testing.T) {
		path := write("conc", "    limits: {concurrent: 2}")
		a, b := startReplica(t, bin, path), startReplica(t, bin, path)
		streamDone := make(chan error, 2)
		for _, r := range []*replica{a, b} {
			go func() {
				client := gatewaytest.OpenAI(r.base+"/v1/", "alice-secret")
				s := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
					Model: "up", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hold")}})
				for s.Next() {
				}
				streamDone <- s.Err()
			}()
		}
		eventually(t, "two held streams, one per replica", func() bool { return held.Load() == 2 })
		for i, r := range []*replica{a, b} {
			if code, _ := r.chat(t, "hi", true); code != 429 {
				t.Errorf("replica %c with two streams open: %d, want 429", 'A'+i, code)
			}
		}
		close(release)
		for range 2 {
			if err := <-streamDone; err != nil {
				t.Errorf("held stream: %v", err)
			}
		}
		for i, r := range []*replica{a, b} {
			if code, _ := r.chat(t, "hi", true); code != 200 {
				t.Errorf("replica %c after the streams ended: %d, want 200", 'A'+i, code)
			}
		}
		t.Logf("two streams open: third request 429 on both replicas; after they ended: 200")
	})

	t.Run("redis killed mid-run, on_error allow, recovery after restart", func(t *testing.T) {
		path := write("down", "    limits: {requests_per_minute: 3}")
		a, b := startReplica(t, bin, path), startReplica(t, bin, path)
		if code, _ := a.chat(t, "hi", false); code != 200 {
			t.Fatalf("before the outage: %d", code)
		}
		srv.Kill()
		for i, r := range []*replica{a, b} {
			start := time.Now()
			code, _ := r.chat(t, "hi", true)
			if took := time.Since(start); code != 200 || took > 2*time.Second {
				t.Errorf("replica %c with Redis down: %d after %v, want 200 within about the 200ms timeout", 'A'+i, code, took)
			}
			resp, err := http.Get(r.base + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			ready, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(ready), `"degraded"`) {
				t.Errorf("replica %c /readyz with Redis down: %d %s", 'A'+i, resp.StatusCode, ready)
			}
		}
		srv.Restart()
		var got []int
		eventually(t, "limits after the restart", func() bool {
			code, _ := a.chat(t, "hi", false)
			return code == 200
		})
		for i := range 3 {
			code, _ := []*replica{a, b}[i%2].chat(t, "hi", false)
			got = append(got, code)
		}
		// Redis came back empty: one request was counted by the poll above, two more pass.
		if fmt.Sprint(got) != "[200 200 429]" {
			t.Errorf("after the restart: %v, want [200 200 429]", got)
		}
		eventually(t, "replica A to log a state store error", func() bool { return strings.Contains(a.logs.String(), "state store error") })
		t.Logf("Redis down: requests served (allow), /readyz degraded; after restart: %v", got)
	})
}
