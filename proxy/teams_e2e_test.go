package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/limits/redistest"
	"github.com/agate-gateway/agate/proxy"
)

// teamsYAML has three teams: eng shares 2 requests a minute, ops a budget of 3 tokens,
// lab narrows its keys' models to demo; carol is in no team.
const teamsYAML = `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}, demo2: {backend: offline}}
teams:
  eng: {limits: {requests_per_minute: 2}}
  ops: {budget: {tokens: 3, period: 24h}}
  lab: {models: [demo]}
keys:
  alice: {key: sk-alice, models: ["*"], team: eng}
  bob: {key: sk-bob, models: ["*"], team: eng}
  carol: {key: sk-carol, models: ["*"]}
  dave: {key: sk-dave, models: ["*"], team: ops}
  erin: {key: sk-erin, models: ["*"], team: ops}
  frank: {key: sk-frank, models: ["*"], team: lab}
`

// askDemo sends a chat request for model to g with key and returns the API error (nil
// when answered).
func askDemo(g *gatewaytest.Gateway, key, model string) error {
	c := gatewaytest.OpenAI(g.V1(), key)
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi there")}})
	return err
}

// outcome renders an answer for the tables: "ok" or "<status> <code>: <message start>".
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return err.Error()
	}
	return fmt.Sprintf("%d %s", apiErr.StatusCode, apiErr.Code)
}

// TestTeams_SharedLimitsBudgetsAndModels: a team's limits and budget are shared by its
// keys, on top of each key's own, and a team's models narrow its keys'; a key in no
// team, or in another, is not affected. The refusals name the team.
func TestTeams_SharedLimitsBudgetsAndModels(t *testing.T) {
	g := gatewaytest.StartYAML(t, teamsYAML+"state: {type: memory}\n", gatewaytest.Options{Runtime: proxy.TestRuntime})
	steps := []struct {
		key, model, want string
		// names is what the refusal's message must name ("": nothing checked).
		names string
	}{
		{key: "sk-alice", model: "demo", want: "ok"},
		{key: "sk-bob", model: "demo", want: "ok"},
		// eng's 2 requests a minute, spent by alice and bob
		{key: "sk-alice", model: "demo", want: "429 rate_limit_exceeded", names: "team eng"},
		{key: "sk-bob", model: "demo", want: "429 rate_limit_exceeded", names: "team eng"},
		{key: "sk-carol", model: "demo", want: "ok"},
		{key: "sk-dave", model: "demo", want: "ok"}, // spends 4 tokens of ops' 3
		{key: "sk-erin", model: "demo", want: "429 insufficient_quota", names: "team ops (of key erin)"},
		{key: "sk-frank", model: "demo", want: "ok"},
		{key: "sk-frank", model: "demo2", want: "404 model_not_found"}, // lab's models: demo only
	}
	for i, s := range steps {
		err := askDemo(g, s.key, s.model)
		if got := outcome(err); got != s.want {
			t.Fatalf("step %d (%s, %s): %s (%v), want %s", i+1, s.key, s.model, got, err, s.want)
		}
		var apiErr *openai.Error
		if s.names != "" && errors.As(err, &apiErr) && !strings.Contains(apiErr.Message, s.names) {
			t.Errorf("step %d: the refusal does not name %s: %q", i+1, s.names, apiErr.Message)
		}
	}
}

// TestTeams_AcrossReplicas: two gateways sharing one redis-server count a team's
// requests together.
func TestTeams_AcrossReplicas(t *testing.T) {
	rs := redistest.Start(t)
	yaml := teamsYAML + fmt.Sprintf("state: {type: redis, url: %q, timeout: 2s}\n", rs.URL())
	g1 := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime})
	g2 := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime})
	steps := []struct {
		g         *gatewaytest.Gateway
		key, want string
	}{
		{g1, "sk-alice", "ok"},
		{g2, "sk-bob", "ok"},
		{g1, "sk-bob", "429 rate_limit_exceeded"},
		{g2, "sk-alice", "429 rate_limit_exceeded"},
		{g2, "sk-dave", "ok"},
		{g1, "sk-erin", "429 insufficient_quota"},
	}
	for i, s := range steps {
		if got := outcome(askDemo(s.g, s.key, "demo")); got != s.want {
			t.Fatalf("step %d (%s): %s, want %s", i+1, s.key, got, s.want)
		}
	}
}
