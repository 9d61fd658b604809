package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/tools"
)

// TestUpstreamErrorMasked: credentials an upstream quotes back in its error message reach
// neither the client (stream or not) nor the log.
func TestUpstreamErrorMasked(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	const (
		key    = "sk-proj-Zx81Qw27Er64Ty39Ui05"
		google = "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"
		bearer = "tok3n.V4lue"
	)
	msg := "key " + key + " (or " + google + ") rejected; saw Authorization: Bearer " + bearer
	for _, status := range []int{400, 500} {
		for _, stream := range []bool{false, true} {
			name := "status " + strconv.Itoa(status)
			if stream {
				name += " stream"
			}
			t.Run(name, func(t *testing.T) {
				up := newUpstream(t, replayJSON(status, []byte(`{"error":{"message":`+jsonString(t, msg)+`,"type":"invalid_request_error","code":"bad"}}`)))
				g := passthroughGateway(t, up)
				got := decodeError(t, g.chat("sk-alice", rawBody(t, userParams("gpt", "hi"), stream)))
				want := "key sk-*** (or AIza***) rejected; saw Authorization: Bearer ***"
				if diff := cmp.Diff(want, got.Message); diff != "" {
					t.Errorf("client message (-want +got):\n%s", diff)
				}
				logs := g.logText()
				for _, secret := range []string{key, google, bearer} {
					if strings.Contains(logs, secret) {
						t.Errorf("the log holds %q:\n%s", secret, logs)
					}
				}
			})
		}
	}
}

// TestToolResultMasked: a server tool's result passes through the credential masking of
// upstream errors before it reaches the model and so the client (the mock model answers
// with the tool's result), on /v1/chat/completions and /v1/responses, streamed or not.
// A stdio server's get-env tool was such a result (tools.TestMCPStdio_Environment).
func TestToolResultMasked(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	const (
		key    = "sk-ant-api03-Zx81Qw27Er64Ty39Ui05Op"
		bearer = "tok3n.V4lue"
		hexKey = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ANTHROPIC_API_KEY="+key+" METRICS=Bearer "+bearer+" ALICE="+hexKey)
	}))
	defer hook.Close()
	cfg := parseConfig(t, `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys:
  alice: {key: alice-key, models: ["*"], tools: [envdump]}
tools:
  envdump: {type: http, url: "{{URL}}", read_only: true}
`, map[string]string{"URL": hook.URL})
	reg, err := tools.New(context.Background(), ToolSources(cfg.Tools), ToolCache(cfg.Cache), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	g := startGatewayConfig(t, cfg, gatewayOptions{tools: reg})
	for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
		for _, stream := range []bool{false, true} {
			t.Run(path+" stream="+strconv.FormatBool(stream), func(t *testing.T) {
				body := chatBody("demo", "run envdump please", stream)
				if path == "/v1/responses" {
					body = `{"model":"demo","input":"run envdump please","stream":` + strconv.FormatBool(stream) + `}`
				}
				r := g.do("POST", path, "alice-key", []byte(body))
				if r.status != 200 {
					t.Fatalf("%d %s", r.status, r.body)
				}
				if !strings.Contains(string(r.body), "ANTHROPIC_API_KEY=sk-***") {
					t.Errorf("the answer lacks the masked tool result:\n%s", r.body)
				}
				for _, secret := range []string{key, bearer, hexKey} {
					if strings.Contains(string(r.body), secret) {
						t.Errorf("the client got %q:\n%s", secret, r.body)
					}
				}
			})
		}
	}
}
