package proxy

import (
	"context"
	"fmt"
	"log/slog"
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
	g := startGateway(t, keysConfig, nil)
	tests := []struct {
		name, method, path string
	}{
		{name: "responses cancel", method: "POST", path: "/v1/responses/resp_1/cancel"},
		{name: "responses input items of an item", method: "GET", path: "/v1/responses/resp_1/input_items/x"},
		{name: "embeddings", method: "POST", path: "/v1/embeddings"},
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
	if len(served) != 9 {
		t.Fatalf("servedEndpoints names %d endpoints, want 9: %q", len(served), servedEndpoints)
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
	g := startGateway(t, keysConfig, nil)
	client := g.client("sk-alice")
	_, embErr := client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "demo",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")},
	})
	for _, err := range []error{embErr} {
		e := sdkError(t, err)
		if e.StatusCode != 404 || !strings.Contains(e.Message, "POST /v1/chat/completions") {
			t.Errorf("status %d, message %q; want 404 naming POST /v1/chat/completions", e.StatusCode, e.Message)
		}
	}
}

// TestRequestKey: the handler reuses the key admit found only under the runtime admit
// used; after a reload that removed the key, the request is authenticated again and
// refused.
func TestRequestKey(t *testing.T) {
	const cfg = `
backends:
  offline: {type: mock}
models:
  demo: {backend: offline}
keys:
%s
`
	before, err := newRuntime(parseConfig(t, fmt.Sprintf(cfg, "  a: {key: sk-a, models: [\"*\"]}"), nil), nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	after, err := newRuntime(parseConfig(t, fmt.Sprintf(cfg, "  b: {key: sk-b, models: [\"*\"]}"), nil), nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set("Authorization", "Bearer sk-a")
	admitted, err := before.authenticateHeader(&ctx.Request.Header)
	if err != nil {
		t.Fatal(err)
	}
	ctx.SetUserValue(admittedRuntime, before)
	ctx.SetUserValue(admittedKey, admitted)
	if k, err := requestKey(&ctx, before); err != nil || k != admitted {
		t.Errorf("same runtime: key %v, %v; want the admitted key", k, err)
	}
	if k, err := requestKey(&ctx, after); err == nil {
		t.Errorf("after a reload without the key: key %v, want unauthorized", k.name)
	}
}
