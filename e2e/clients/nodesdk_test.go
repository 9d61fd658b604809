package clients

import (
	"context"
	"encoding/json"
	"errors"
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
	fakes := gatewaytest.Fleet(func(kind string) *gatewaytest.Fake { return gatewaytest.NewFake(t, kind) })
	g := gatewaytest.StartYAML(t, "server: {listen: \"127.0.0.1:0\"}\n"+gatewaytest.FleetClientYAML(fakes), gatewaytest.Options{})
	script := filepath.Join(t.TempDir(), "sdk.cjs")
	if err := os.WriteFile(script, []byte(nodeSDKScript), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, "m-mock")
	cmd.Env = append(os.Environ(), "BASE="+g.URL)
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

// responsesMockYAML is the gateway of TestResponses_NodeSDK: model "m" on the mock backend
// (as upstream model up-model), for keys alice and bob.
const responsesMockYAML = `server: {listen: "127.0.0.1:0"}
backends:
  up: {type: mock}
models:
  m: {backend: up, upstream_model: up-model}
  # The default model of the OpenAI Agents SDK 0.20.0 (testdata/node/agents.mjs).
  gpt-5.6-luna: {backend: up, upstream_model: up-model}
keys:
  alice: {key: alice-key, models: ["*"]}
  bob: {key: bob-key, models: ["*"]}
`

// TestResponses_NodeSDK runs the scripts of testdata/node against the mock backend: the
// Node openai SDK (responses.mjs: responses.create, responses.stream with finalResponse(),
// a function call continued with previous_response_id, retrieve, delete) and the Vercel AI
// SDK's default OpenAI provider (vercel.mjs: generateText, streamText, a tool loop) and
// the OpenAI Agents SDK with its default model (agents.mjs: an agent with a function tool,
// run plain and streamed). It
// needs node and the npm packages in AGATE_NODE_MODULES, else ../../.ci/npm/node_modules
// (.ci/run installs them there); without them it skips, and fails under CI=true.
func TestResponses_NodeSDK(t *testing.T) {
	t.Parallel() // its own gateway and Node processes (#54)
	node := gatewaytest.Require(t, "node", "apt-get install nodejs")
	modules := os.Getenv("AGATE_NODE_MODULES")
	if modules == "" {
		modules, _ = filepath.Abs(filepath.Join("..", "..", ".ci", "npm", "node_modules"))
	}
	if _, err := os.Stat(filepath.Join(modules, "@ai-sdk", "openai", "package.json")); err != nil {
		gatewaytest.Missing(t, "the npm packages (openai, ai, @ai-sdk/openai) are not installed: "+err.Error(),
			"set AGATE_NODE_MODULES; .ci/run installs them in .ci/npm")
	}
	tests := []struct {
		script string
		want   map[string]map[string]any
	}{
		{"responses.mjs", map[string]map[string]any{
			"create": {"status": "completed", "text": "hello from node", "model": "m"},
			"stream": {"text": "stream from node", "first": "response.created", "last": "response.completed", "deltas": float64(3)},
			"tools":  {"call": "get_weather", "text": "Tool results: sunny"},
			"stored": {"same": true, "afterDelete": "404"},
		}},
		{"vercel.mjs", map[string]map[string]any{
			"generate": {"text": "hello from vercel", "finish": "stop", "usage": true},
			"stream":   {"text": "stream from vercel", "finish": "stop"},
			"tools":    {"text": "Tool results: sunny", "steps": float64(2), "finish": "stop"},
		}},
		{"agents.mjs", map[string]map[string]any{
			"run":    {"output": "Tool results: sunny", "items": "tool_call_item,tool_call_output_item,message_output_item"},
			"stream": {"output": "hello agents", "text": "hello agents"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			g := gatewaytest.StartYAML(t, responsesMockYAML, gatewaytest.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "node", tt.script))
			cmd.Env = append(os.Environ(), "AGATE_URL="+g.V1(), "AGATE_NODE_MODULES="+modules,
				"OPENAI_MODULE="+filepath.Join(modules, "openai"))
			outBytes, err := cmd.Output()
			if err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					t.Fatalf("node: %v\n%s", err, ee.Stderr)
				}
				t.Fatalf("node: %v", err)
			}
			var got map[string]map[string]any
			if err := json.Unmarshal(outBytes, &got); err != nil {
				t.Fatalf("node output: %v\n%s", err, outBytes)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
