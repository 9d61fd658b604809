package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/valyala/fasthttp"
)

// TestUnservedEndpoint: an OpenAI (or other provider's) endpoint Agate does not serve is a
// 404 in OpenAI's error shape whose message names the request and every served endpoint;
// each endpoint it names is indeed served.
func TestUnservedEndpoint(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startGateway(t, keysConfig, nil)
	tests := []struct {
		name, method, path string
	}{
		{name: "responses cancel", method: "POST", path: "/v1/responses/resp_1/cancel"},
		{name: "responses input items of an item", method: "GET", path: "/v1/responses/resp_1/input_items/x"},
		{name: "legacy completions", method: "POST", path: "/v1/completions"},
		{name: "retrieve model", method: "GET", path: "/v1/models/demo"},
		{name: "images", method: "POST", path: "/v1/images/generations"},
		{name: "audio", method: "POST", path: "/v1/audio/transcriptions"},
		{name: "anthropic messages batches", method: "POST", path: "/v1/messages/batches"},
		{name: "root", method: "GET", path: "/"},
		{name: "trailing slash", method: "POST", path: "/v1/chat/completions/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			if tt.method == "POST" {
				body = []byte(helloDemo)
			}
			r := g.do(tt.method, tt.path, "sk-alice", body)
			got := decodeError(t, r)
			wantMsg := "agate does not serve " + tt.method + " " + tt.path + "; it serves " + servedEndpoints
			want := errorView{Status: 404, Type: "invalid_request_error", Code: "not_found", Message: wantMsg}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}

	// Every endpoint the message names is served: none of them is a 404, but for an unknown
	// {id}, and that one not the unserved-endpoint 404.
	served := regexp.MustCompile(`(GET|POST) (/[a-z0-9/_{}]*)`).FindAllStringSubmatch(servedEndpoints, -1)
	if len(served) != 10 {
		t.Fatalf("servedEndpoints names %d endpoints, want 10: %q", len(served), servedEndpoints)
	}
	for _, m := range served {
		var body []byte
		if m[1] == "POST" {
			body = []byte(helloDemo)
		}
		r := g.do(m[1], m[2], "sk-alice", body)
		if r.status == 404 && (!strings.Contains(m[2], "{id}") || strings.Contains(string(r.body), "does not serve")) {
			t.Errorf("%s %s, named as served, answers 404: %s", m[1], m[2], r.body)
		}
	}
}

// TestUnservedEndpoint_SDK: the SDK reports an unserved endpoint as a 404 *openai.Error
// that tells the user what to use instead.
func TestUnservedEndpoint_SDK(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startGateway(t, keysConfig, nil)
	client := g.client("sk-alice")
	_, completionErr := client.Completions.New(context.Background(), openai.CompletionNewParams{
		Model:  openai.CompletionNewParamsModel("demo"),
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hi")},
	})
	for _, err := range []error{completionErr} {
		e := sdkError(t, err)
		if e.StatusCode != 404 || !strings.Contains(e.Message, "POST /v1/chat/completions") {
			t.Errorf("status %d, message %q; want 404 naming POST /v1/chat/completions", e.StatusCode, e.Message)
		}
	}
}

// TestRequestKey: a connection keeps the credential header it last had accepted, and a
// request on it presenting the very same header under the same runtime gets the same
// key without the full check; any other header, the other credential header with the
// same bytes, or a reload is checked in full.
func TestRequestKey(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	const cfg = `
backends:
  offline: {type: mock}
models:
  demo: {backend: offline}
keys:
%s
`
	newRT := func(keys string) *runtime {
		rt, err := newRuntime(parseConfig(t, fmt.Sprintf(cfg, keys), nil), nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	before := newRT(`  a: {key: sk-a, models: ["*"]}` + "\n" + `  c: {key: sk-c, models: ["*"]}`)
	after := newRT(`  b: {key: sk-b, models: ["*"]}`)
	conn := &clientConn{Conn: &net.TCPConn{}}
	request := func(rt *runtime, header, value string) (string, error) {
		t.Helper()
		var ctx fasthttp.RequestCtx
		ctx.Init2(conn, nil, false)
		ctx.Request.Header.Set(header, value)
		k, err := requestKey(&ctx, rt)
		if err != nil {
			return "", err
		}
		return k.name, nil
	}
	steps := []struct {
		name          string
		rt            *runtime
		header, value string
		forget        bool // empty the runtime's keys first: only the connection's kept key can answer
		want          string
	}{
		{"first request: checked in full and kept", before, "Authorization", "Bearer sk-a", false, "a"},
		{"same header: the kept key", before, "Authorization", "Bearer sk-a", true, "a"},
		{"another header value: checked in full", before, "Authorization", "Bearer sk-c", true, ""},
		{"after a failed check the kept key stands", before, "Authorization", "Bearer sk-a", true, "a"},
		{"same bytes in the other header: checked in full", before, "X-Api-Key", "Bearer sk-a", true, ""},
		{"another key: checked in full and kept", before, "Authorization", "Bearer sk-c", false, "c"},
		{"x-api-key: checked in full and kept", before, "X-Api-Key", "sk-a", false, "a"},
		{"x-api-key again: the kept key", before, "X-Api-Key", "sk-a", true, "a"},
		{"after a reload that removed the key: refused", after, "X-Api-Key", "sk-a", false, ""},
		{"after a reload, the new runtime's key", after, "Authorization", "Bearer sk-b", false, "b"},
	}
	keys := before.keys
	for _, st := range steps {
		before.keys = keys
		if st.forget {
			before.keys = nil
		}
		got, err := request(st.rt, st.header, st.value)
		if st.want == "" {
			if err == nil {
				t.Errorf("%s: key %q, want unauthorized", st.name, got)
			}
			continue
		}
		if err != nil || got != st.want {
			t.Errorf("%s: key %q, %v; want %q", st.name, got, err, st.want)
		}
	}
}

// TestRequestKey_AdmittedRequest: admit and the handler both ask for the key of one
// request; the second time the connection answers from what the first found, without
// reading the header again, but only for that same request and runtime.
func TestRequestKey_AdmittedRequest(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	const cfg = `
backends:
  offline: {type: mock}
models:
  demo: {backend: offline}
keys:
  a: {key: sk-a, models: ["*"]}
`
	newRT := func() *runtime {
		rt, err := newRuntime(parseConfig(t, cfg, nil), nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	rt, reloaded := newRT(), newRT()
	conn := &clientConn{Conn: &net.TCPConn{}}
	var ctx fasthttp.RequestCtx
	ctx.Init2(conn, nil, false)
	ctx.Request.Header.Set("Authorization", "Bearer sk-a")
	if k, err := requestKey(&ctx, rt); err != nil || k.name != "a" {
		t.Fatalf("admit: %v, %v", k, err)
	}
	// The header changed behind the connection's back: only a new check would see it.
	ctx.Request.Header.Set("Authorization", "Bearer sk-wrong")
	if k, err := requestKey(&ctx, rt); err != nil || k.name != "a" {
		t.Errorf("the handler of the admitted request: %v, %v; want the admitted key", k, err)
	}
	if _, err := requestKey(&ctx, reloaded); err == nil {
		t.Error("another runtime: the admitted key was taken, want a new check")
	}
	var next fasthttp.RequestCtx // the connection's next request
	next.Init2(conn, nil, false)
	next.Request.Header.Set("Authorization", "Bearer sk-wrong")
	if _, err := requestKey(&next, rt); err == nil {
		t.Error("the next request: the admitted key was taken, want a new check")
	}
}

// BenchmarkRequestKey: a request's key found by the full check (the digest and the
// comparison over all keys, as every request did before connections kept their
// credential) and from the connection's kept credential.
func BenchmarkRequestKey(b *testing.B) {
	rt, err := newRuntime(parseConfig(b, `
backends:
  offline: {type: mock}
models:
  demo: {backend: offline}
keys:
  bench: {key: sk-bench-0123456789abcdef, models: ["*"]}
`, nil), nil, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	var ctx fasthttp.RequestCtx
	ctx.Init2(&clientConn{Conn: &net.TCPConn{}}, nil, false)
	ctx.Request.Header.Set("Authorization", "Bearer sk-bench-0123456789abcdef")
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := rt.authenticateHeader(&ctx.Request.Header); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kept", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := requestKey(&ctx, rt); err != nil {
				b.Fatal(err)
			}
		}
	})
}
