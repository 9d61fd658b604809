package proxy

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
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
