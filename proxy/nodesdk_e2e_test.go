package proxy_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/gatewaytest"
)

// The Node Anthropic SDK (@anthropic-ai/sdk) as users run it: messages.create and
// messages.stream with finalMessage(), against the mock backend (the Go SDK tests cover
// every upstream wire).

// nodeSDKScript prints, for each model given, the text and stop reason of a created and a
// streamed message as JSON.
const nodeSDKScript = `
const Anthropic = require('@anthropic-ai/sdk');
const client = new Anthropic({ baseURL: process.env.BASE, apiKey: 'client-key', maxRetries: 0 });
(async () => {
  const out = {};
  for (const model of process.argv.slice(2)) {
    const params = { model, max_tokens: 100, messages: [{ role: 'user', content: 'hello node' }] };
    const created = await client.messages.create(params);
    const final = await client.messages.stream(params).finalMessage();
    out[model] = [created.content[0].text + '|' + created.stop_reason, final.content[0].text + '|' + final.stop_reason];
  }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`

// nodeSDK returns the node executable when @anthropic-ai/sdk resolves (NODE_PATH): skipped
// when missing, fatal under CI=true (.ci/run installs it).
func nodeSDK(t *testing.T) string {
	node := gatewaytest.Require(t, "node", "apt-get install nodejs")
	if err := exec.Command(node, "-e", "require.resolve('@anthropic-ai/sdk')").Run(); err != nil {
		gatewaytest.Missing(t, "@anthropic-ai/sdk does not resolve from NODE_PATH: "+err.Error(),
			"npm install @anthropic-ai/sdk, NODE_PATH=<prefix>/node_modules")
	}
	return node
}

func TestNodeSDK_CreateAndStream(t *testing.T) {
	t.Parallel() // its own gateway and Node process (#54)
	node := nodeSDK(t)
	g := startMessagesGateway(t, "")
	script := filepath.Join(t.TempDir(), "sdk.cjs")
	if err := os.WriteFile(script, []byte(nodeSDKScript), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, "m-mock")
	cmd.Env = append(os.Environ(), "BASE="+g.url)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node: %v\n%s\n%s", err, out, stderr)
	}
	var got map[string][]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := map[string][]string{"m-mock": {"hello node|end_turn", "hello node|end_turn"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}
