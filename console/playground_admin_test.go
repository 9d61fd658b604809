package console_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agate-gateway/agate/internal/gatewaytest"
)

// TestConsole_PlaygroundOnAdminListener: with admin.listen the console is on the admin
// listener, and so is the Playground's one client route, POST /v1/chat/completions,
// served in-process with the client key's policy: a streamed answer through openai-go;
// no key, or the admin session alone, is refused; no other client route is served there.
func TestConsole_PlaygroundOnAdminListener(t *testing.T) {
	y := strings.Replace(consoleYAML(sqliteLedger(sqliteLedgers.Fresh(t))), "  resync: 100ms", "  resync: 100ms\n  listen: 127.0.0.1:1", 1)
	g := gatewaytest.StartYAML(t, y, gatewaytest.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Server.ServeAdmin(ln)
	admin := "http://" + ln.Addr().String()

	c := gatewaytest.OpenAI(admin+"/v1", "sk-xss-config")
	st := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "demo",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello from the admin listener")}})
	var text strings.Builder
	for st.Next() {
		if ch := st.Current(); len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if err := st.Err(); err != nil || !strings.Contains(text.String(), "hello from the admin listener") {
		t.Fatalf("the Playground's stream on the admin listener: %q, %v", text.String(), err)
	}

	hc := client(t)
	signInAt(t, hc, admin)
	body := `{"model":"demo","messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name, method, path string
		header             map[string]string
		want               int
	}{
		{"the admin session, no client key", "POST", "/v1/chat/completions", map[string]string{"Content-Type": "application/json"}, 401},
		{"another client route", "GET", "/v1/models", map[string]string{"Authorization": "Bearer sk-xss-config"}, 404},
		{"another client route, posted", "POST", "/v1/responses", map[string]string{"Authorization": "Bearer sk-xss-config", "Content-Type": "application/json"}, 404},
	} {
		if code, raw := call(t, hc, tc.method, admin+tc.path, body, tc.header); code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, raw, tc.want)
		}
	}
}
