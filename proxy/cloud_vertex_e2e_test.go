package proxy_test

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
	"github.com/agate-gateway/agate/telemetry"
)

// googleTokenEndpoint is Google's OAuth2 token endpoint on loopback for one service
// account: it grants a JWT bearer request (RFC 7523: grant_type
// urn:ietf:params:oauth:grant-type:jwt-bearer and an RS256 assertion) whose signature
// verifies with the account's public key and whose claims name the account (iss), the
// endpoint (aud) and the cloud-platform scope, an access token ya29.test-1, -2, ...
type googleTokenEndpoint struct {
	srv    *httptest.Server
	key    *rsa.PrivateKey
	email  string
	grants atomic.Int32
}

// newGoogleTokenEndpoint starts the token endpoint of a service account whose key is
// testdata/googleauth/service-account-key.pem (a test key: see its README).
func newGoogleTokenEndpoint(t *testing.T) *googleTokenEndpoint {
	b, err := os.ReadFile(filepath.Join("testdata", "googleauth", "service-account-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PRIVATE KEY" {
		t.Fatal("testdata/googleauth/service-account-key.pem: no PKCS #8 private key")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	key, ok := parsed.(*rsa.PrivateKey)
	if !ok {
		t.Fatalf("testdata/googleauth/service-account-key.pem: a %T, not an RSA key", parsed)
	}
	e := &googleTokenEndpoint{key: key, email: "agate-test@my-proj.iam.gserviceaccount.com"}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if why := e.check(form); why != "" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"invalid_grant","error_description":%q}`, why)
			return
		}
		fmt.Fprintf(w, `{"access_token":"ya29.test-%d","expires_in":3599,"token_type":"Bearer"}`, e.grants.Add(1))
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *googleTokenEndpoint) check(form url.Values) string {
	if form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		return "grant_type " + form.Get("grant_type")
	}
	parts := strings.Split(form.Get("assertion"), ".")
	if len(parts) != 3 {
		return "assertion is not a JWT"
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "signature encoding"
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(&e.key.PublicKey, crypto.SHA256, sum[:], sig) != nil {
		return "Invalid JWT Signature."
	}
	header, _ := base64.RawURLEncoding.DecodeString(parts[0])
	claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	switch {
	case gjson.GetBytes(header, "alg").String() != "RS256":
		return "alg"
	case gjson.GetBytes(claims, "iss").String() != e.email:
		return "iss"
	case gjson.GetBytes(claims, "aud").String() != e.srv.URL+"/token":
		return "aud " + gjson.GetBytes(claims, "aud").String()
	case !strings.Contains(gjson.GetBytes(claims, "scope").String(), "https://www.googleapis.com/auth/cloud-platform"):
		return "scope"
	case gjson.GetBytes(claims, "exp").Int() < time.Now().Unix():
		return "expired assertion"
	}
	return ""
}

// serviceAccountFile writes the service-account key file of e's account, its token_uri
// the loopback endpoint, and returns its path.
func (e *googleTokenEndpoint) serviceAccountFile(t *testing.T) string {
	der, err := x509.MarshalPKCS8PrivateKey(e.key)
	if err != nil {
		t.Fatal(err)
	}
	sa, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "my-proj", "private_key_id": "0123456789abcdef",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": e.email, "client_id": "1234567890",
		"auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": e.srv.URL + "/token",
	})
	path := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(path, sa, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// vertexAuth is the check of a Vertex AI fake: the bearer the token endpoint granted.
func vertexAuth(r *http.Request) string {
	if r.Header.Get("Authorization") != "Bearer ya29.test-1" {
		return "Request had invalid authentication credentials. Expected OAuth 2 access token"
	}
	if r.Header.Get("x-goog-api-key") != "" || r.Header.Get("x-api-key") != "" {
		return "unexpected api key header"
	}
	return ""
}

// TestVertex_Gemini: a vertex backend (publisher google, a region) gets an OAuth2 token
// through golang.org/x/oauth2/google's service-account flow (a JWT assertion the loopback
// token endpoint verifies with the account's key), and calls
// /v1/projects/<p>/locations/<l>/publishers/google/models/<m>:generateContent and
// :streamGenerateContent?alt=sse with it: one grant for four requests of openai-go,
// whole and streamed. The answers are the Gemini API's recorded bodies, which Vertex AI
// serves in the same GenerateContentResponse shape.
func TestVertex_Gemini(t *testing.T) {
	tokens := newGoogleTokenEndpoint(t)
	up := newCloudFake(t, vertexAuth,
		recording(t, "translate/gemini/testdata/stream-text-basic.mirascope.txtar", "upstream.sse"),
		recording(t, "translate/gemini/testdata/json-text.mirascope.txtar", "upstream.json"))
	g := gatewaytest.StartYAML(t, `
backends:
  vx:
    type: vertex
    base_url: `+up.srv.URL+`
    vertex: {project: my-proj, location: us-central1, credentials_file: `+tokens.serviceAccountFile(t)+`}
models:
  flash: {backend: vx, upstream_model: gemini-2.5-flash}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	client := gatewaytest.OpenAI(g.V1(), "client-key")
	for range 2 {
		whole, streamed := chatBoth(t, client, "flash")
		if !strings.Contains(whole, "4242") || !strings.Contains(streamed, "4242") {
			t.Errorf("answers %q, %q", whole, streamed)
		}
	}
	if n := tokens.grants.Load(); n != 1 {
		t.Errorf("%d token grants for 4 requests, want 1", n)
	}
	const base = "/v1/projects/my-proj/locations/us-central1/publishers/google/models/gemini-2.5-flash"
	for _, r := range up.seen() {
		if r.uri != base+":generateContent" && r.uri != base+":streamGenerateContent?alt=sse" {
			t.Errorf("upstream URI %q", r.uri)
		}
		if !gjson.Get(r.body, "contents.0.parts.0.text").Exists() {
			t.Errorf("upstream body %s", r.body)
		}
	}
}

// TestVertex_Claude: a vertex backend with publisher anthropic on the global endpoint
// calls :rawPredict and :streamRawPredict with anthropic_version vertex-2023-10-16 in the
// body and no model, and anthropic-sdk-go gets the recorded Claude-on-Vertex answers.
func TestVertex_Claude(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	tokens := newGoogleTokenEndpoint(t)
	up := newCloudFake(t, func(r *http.Request) string {
		if why := vertexAuth(r); why != "" {
			return why
		}
		if r.Header.Get("anthropic-version") != "" {
			return "unexpected anthropic-version header"
		}
		return ""
	}, recording(t, "translate/anthropic/testdata/vertex/stream-text.mirascope.txtar", "upstream.sse"),
		recording(t, "translate/anthropic/testdata/vertex/json-text.mirascope.txtar", "upstream.json"))
	g := gatewaytest.StartYAML(t, `
backends:
  vx:
    type: vertex
    base_url: `+up.srv.URL+`
    vertex: {project: my-proj, location: global, publisher: anthropic, credentials_file: `+tokens.serviceAccountFile(t)+`}
models:
  haiku: {backend: vx, upstream_model: claude-haiku-4-5@20251001}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	client := gatewaytest.Anthropic(g.URL, "client-key")
	params := anthropic.MessageNewParams{Model: "haiku", MaxTokens: 1024,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is 4200 + 42?"))}}
	msg, err := client.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "4200 + 42 = 4242" || msg.StopReason != "end_turn" {
		t.Errorf("message %+v", msg)
	}
	stream := client.Messages.NewStreaming(context.Background(), params)
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) != 1 || acc.Content[0].Text != "4200 + 42 = 4242" || acc.Usage.OutputTokens != 15 {
		t.Errorf("streamed message %+v", acc)
	}
	const base = "/v1/projects/my-proj/locations/global/publishers/anthropic/models/claude-haiku-4-5@20251001"
	seen := up.seen()
	if len(seen) != 2 || seen[0].uri != base+":rawPredict" || seen[1].uri != base+":streamRawPredict" {
		t.Fatalf("upstream requests %+v", seen)
	}
	for _, r := range seen {
		if gjson.Get(r.body, "anthropic_version").String() != "vertex-2023-10-16" || gjson.Get(r.body, "model").Exists() {
			t.Errorf("upstream body %s", r.body)
		}
	}
}

// TestVertex_RejectedToken: a token Vertex AI refuses (401: a service account without the
// role) is the 502 upstream_auth_failed that sends the operator to the backend's vertex
// credentials, not to an api_key it does not have.
func TestVertex_RejectedToken(t *testing.T) {
	tokens := newGoogleTokenEndpoint(t)
	up := newCloudFake(t, func(*http.Request) string { return "Request had invalid authentication credentials." }, nil, nil)
	g := gatewaytest.StartYAML(t, `
backends:
  vx:
    type: vertex
    base_url: `+up.srv.URL+`
    vertex: {project: p, location: global, credentials_file: `+tokens.serviceAccountFile(t)+`}
models:
  flash: {backend: vx}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	resp, err := http.Post(g.V1()+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"flash","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || gjson.GetBytes(body, "error.code").String() != "upstream_auth_failed" ||
		!strings.Contains(gjson.GetBytes(body, "error.message").String(), "backends.vx.vertex") ||
		strings.Contains(string(body), "ya29") {
		t.Errorf("status %d body %s", resp.StatusCode, body)
	}
}

// TestCloud_Spans: the chat spans of the cloud backends carry gen_ai.provider.name
// azure.ai.openai and gcp.vertex_ai, and no span attribute holds a credential (the api-key,
// the OAuth2 token).
func TestCloud_Spans(t *testing.T) {
	recv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	tokens := newGoogleTokenEndpoint(t)
	vertex := newCloudFake(t, vertexAuth, nil, recording(t, "translate/gemini/testdata/json-text.mirascope.txtar", "upstream.json"))
	azure := newCloudFake(t, func(r *http.Request) string {
		if r.Header.Get("api-key") != "azure-span-key-77" {
			return "Access denied"
		}
		return ""
	}, nil, recording(t, "translate/openai/testdata/azure-json-text.mirascope.txtar", "upstream.json"))
	cfg := gatewaytest.Parse(t, `
backends:
  aoai: {type: azure, base_url: `+azure.srv.URL+`, api_key: azure-span-key-77}
  vx: {type: vertex, base_url: `+vertex.srv.URL+`, vertex: {project: p, location: global, credentials_file: `+tokens.serviceAccountFile(t)+`}}
models:
  mini: {backend: aoai, upstream_model: gpt-4o-mini}
  flash: {backend: vx, upstream_model: gemini-2.5-flash}
telemetry: {traces: true}
`)
	tracer, err := telemetry.New(context.Background(), proxy.TelemetryOptions(cfg.Telemetry))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tracer.Shutdown(context.Background()) })
	g := gatewaytest.Start(t, cfg, gatewaytest.Options{Runtime: proxy.TestRuntime, Tracer: tracer})
	client := gatewaytest.OpenAI(g.V1(), "client-key")
	for model, want := range map[string]string{"mini": "azure.ai.openai", "flash": "gcp.vertex_ai"} {
		_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is 4200 + 42?")}})
		if err != nil {
			t.Fatal(err)
		}
		spans := recv.waitSpans(t, tracer)
		var chat map[string]string
		for _, s := range spans {
			a := attrs(s)
			for k, v := range a {
				if strings.Contains(v, "azure-span-key-77") || strings.Contains(v, "ya29.") {
					t.Errorf("span %s attribute %s holds a credential", s.Name, k)
				}
			}
			if strings.HasPrefix(s.Name, "chat ") {
				chat = a
			}
		}
		if chat["gen_ai.provider.name"] != want {
			t.Errorf("%s: chat span gen_ai.provider.name %q, want %q", model, chat["gen_ai.provider.name"], want)
		}
	}
}
