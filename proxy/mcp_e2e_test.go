package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
	"github.com/agate-gateway/agate/telemetry"
)

// The gateway's MCP endpoint (mcp.enabled) through the official MCP Go SDK's client: an
// upstream MCP server "team" (in process, streamable HTTP, restartable on its port) and a
// built-in are served to keys that see different tools.

// teamMCP is the upstream MCP server of these tests.
type teamMCP struct {
	server  *mcp.Server
	addr    string
	lookups atomic.Int32
	// blocked is closed when the block tool's context ends (the client cancelled).
	blocked     chan struct{}
	blockedOnce sync.Once
	// started is closed when the block tool starts.
	started     chan struct{}
	startedOnce sync.Once
	// release lets the held tool answer.
	release chan struct{}
	// progressSeen is closed by the test once its client has seen the progress tool's
	// reports: the tool answers then (the SDK's client hands notifications to their
	// handler apart from responses, so reports sent right before a result may trail it).
	progressSeen chan struct{}
	progressOnce sync.Once

	mu  sync.Mutex
	srv *http.Server
}

func newTeamMCP(t testing.TB) *teamMCP {
	m := &teamMCP{blocked: make(chan struct{}), started: make(chan struct{}), release: make(chan struct{}), progressSeen: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "team", Version: "1"}, nil)
	type keyArgs struct {
		Key string `json:"key"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Title: "Lookup", Description: "Look a key up.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in keyArgs) (*mcp.CallToolResult, any, error) {
			m.lookups.Add(1)
			return text("value-of-" + in.Key), nil, nil
		})
	yes := true
	s.AddTool(&mcp.Tool{Name: "delete", Description: "Deletes a key.", InputSchema: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}`),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, IdempotentHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("deleted"), nil })
	s.AddTool(&mcp.Tool{Name: "progress", Description: "Reports progress three times.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			token := req.Params.GetProgressToken()
			for i := 1; i <= 3; i++ {
				if token != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i)})
				}
			}
			select {
			case <-m.progressSeen:
			case <-time.After(2 * time.Second): // the test fails on the missing reports
			}
			return text("progressed"), nil
		})
	s.AddTool(&mcp.Tool{Name: "ack", Description: "Tells the progress tool its reports were seen.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			m.progressOnce.Do(func() { close(m.progressSeen) })
			return text("ok"), nil
		})
	s.AddTool(&mcp.Tool{Name: "block", Description: "Runs until cancelled.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			m.startedOnce.Do(func() { close(m.started) })
			<-ctx.Done()
			m.blockedOnce.Do(func() { close(m.blocked) })
			return nil, ctx.Err()
		})
	s.AddTool(&mcp.Tool{Name: "held", Description: "Reports progress, then answers once released.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if token := req.Params.GetProgressToken(); token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 1, Message: "holding"})
			}
			select {
			case <-m.release:
				return text("released"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	s.AddTool(&mcp.Tool{Name: "leak", Description: "Returns a secret.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(`env: ANTHROPIC_API_KEY=sk-ant-api03-aaaaBBBB1111cccc`), nil
		})
	s.AddResource(&mcp.Resource{Name: "readme", URI: "file:///team/readme.md", MIMEType: "text/markdown"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: "# Team\ntoken sk-proj-AbC123dEf456GhI789"}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greets someone.", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say hello to " + req.Params.Arguments["name"]}}}}, nil
		})
	m.server = s
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.addr = ln.Addr().String()
	m.serve(ln)
	t.Cleanup(m.stop)
	return m
}

func (m *teamMCP) url() string { return "http://" + m.addr + "/mcp" }

func (m *teamMCP) serve(ln net.Listener) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m.server }, nil)
	srv := &http.Server{Handler: h}
	m.mu.Lock()
	m.srv = srv
	m.mu.Unlock()
	go srv.Serve(ln)
}

// stop closes the server and every connection to it: the gateway's session ends.
func (m *teamMCP) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.srv != nil {
		m.srv.Close()
		m.srv = nil
	}
}

// restart serves again on the same port.
func (m *teamMCP) restart(t *testing.T) {
	ln, err := net.Listen("tcp", m.addr)
	if err != nil {
		t.Fatal(err)
	}
	m.serve(ln)
}

// mcpGateway is a gateway serving the MCP endpoint to three keys.
type mcpGateway struct {
	*gatewaytest.Gateway
	team *teamMCP
}

const mcpKeysYAML = `keys:
  alice: {key: sk-alice, models: ["*"], tools: [team, clock], max_concurrent_tool_calls: 2}
  bob: {key: sk-bob, models: ["*"], tools: [team/lookup]}
  nobody: {key: sk-nobody, models: ["*"]}
`

func startMCPGateway(t testing.TB, extra string) *mcpGateway {
	team := newTeamMCP(t)
	y := fmt.Sprintf(`backends:
  offline: {type: mock}
mcp: {enabled: true}
%stools:
  team: {type: mcp, url: %q, timeout: 5s}
  clock: {type: builtin, name: time_now}
cache: {max_entries: 100, ttl: 1m}
%s`, mcpKeysYAML, team.url(), extra)
	g := gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime, Tools: true})
	return &mcpGateway{Gateway: g, team: team}
}

// bearerTransport sends one header with every request.
type bearerTransport struct {
	name, value string
	base        http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(b.name, b.value)
	return b.base.RoundTrip(r)
}

// connect opens an MCP client session to the gateway with key (as a Bearer token, or as
// x-api-key when header says so).
func (g *mcpGateway) connect(t *testing.T, key string, opts *mcp.ClientOptions, header ...string) (*mcp.ClientSession, error) {
	t.Helper()
	name, value := "Authorization", "Bearer "+key
	if len(header) > 0 {
		name, value = header[0], key
	}
	hc := &http.Client{Transport: bearerTransport{name: name, value: value, base: http.DefaultTransport}}
	client := mcp.NewClient(&mcp.Implementation{Name: "agate-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.URL + "/mcp", HTTPClient: hc}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func (g *mcpGateway) mustConnect(t *testing.T, key string, opts *mcp.ClientOptions, header ...string) *mcp.ClientSession {
	t.Helper()
	cs, err := g.connect(t, key, opts, header...)
	if err != nil {
		t.Fatalf("connect with %s: %v", key, err)
	}
	return cs
}

func (g *mcpGateway) counter(t *testing.T, name string, labels map[string]string) float64 {
	return (&loopGateway{srv: g.Server, reg: g.Registry}).counter(t, name, labels)
}

func toolNamesOf(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func TestMCPEndpoint_ToolsPerKey(t *testing.T) {
	g := startMCPGateway(t, "")
	alice := g.mustConnect(t, "sk-alice", nil)
	bob := g.mustConnect(t, "sk-bob", nil, "X-Api-Key")

	t.Run("each key lists exactly its tools, sorted, named as the loop names them", func(t *testing.T) {
		want := []string{"clock", "team__ack", "team__block", "team__delete", "team__held", "team__leak", "team__lookup", "team__progress"}
		if got := toolNamesOf(t, alice); !slices.Equal(got, want) {
			t.Errorf("alice's tools %v, want %v", got, want)
		}
		if got := toolNamesOf(t, bob); !slices.Equal(got, []string{"team__lookup"}) {
			t.Errorf("bob's tools %v, want [team__lookup]", got)
		}
	})

	t.Run("schemas and hints come from the source", func(t *testing.T) {
		res, err := alice.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*mcp.Tool{}
		for _, tool := range res.Tools {
			byName[tool.Name] = tool
		}
		lookup, del := byName["team__lookup"], byName["team__delete"]
		if a := lookup.Annotations; a == nil || !a.ReadOnlyHint || lookup.Title != "Lookup" {
			t.Errorf("lookup: title %q annotations %+v, want read-only Lookup", lookup.Title, a)
		}
		if a := del.Annotations; a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint || !a.IdempotentHint {
			t.Errorf("delete annotations %+v, want destructive and idempotent", a)
		}
		schema, _ := json.Marshal(del.InputSchema)
		if !strings.Contains(string(schema), `"required":["key"]`) {
			t.Errorf("delete schema %s", schema)
		}
	})

	t.Run("a key cannot call a tool it was not given, even by exact name", func(t *testing.T) {
		for _, name := range []string{"team__delete", "clock", "team__nope"} {
			_, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"key": "x"}})
			if err == nil || !strings.Contains(err.Error(), "unknown tool") {
				t.Errorf("bob calling %s: err %v, want unknown tool", name, err)
			}
		}
	})

	t.Run("a key without tools is refused at initialize", func(t *testing.T) {
		_, err := g.connect(t, "sk-nobody", nil)
		if err == nil || !strings.Contains(err.Error(), `API key "nobody" has no tools`) {
			t.Errorf("connect with a key without tools: %v", err)
		}
	})

	t.Run("a wrong key is refused", func(t *testing.T) {
		_, err := g.connect(t, "sk-mallory", nil)
		if err == nil {
			t.Error("connected with a wrong key")
		}
	})
}

func TestMCPEndpoint_Calls(t *testing.T) {
	g := startMCPGateway(t, "")
	alice := g.mustConnect(t, "sk-alice", nil)
	bob := g.mustConnect(t, "sk-bob", nil)

	t.Run("results, schema validation, masking, builtins", func(t *testing.T) {
		tests := []struct {
			name, tool string
			args       any
			want       string
			isError    bool
		}{
			{name: "mcp tool", tool: "team__lookup", args: map[string]any{"key": "a"}, want: "value-of-a"},
			{name: "builtin", tool: "clock", args: map[string]any{}, want: "T"},
			{name: "schema refused before the tool runs", tool: "team__delete", args: map[string]any{}, want: "invalid arguments for tool team__delete", isError: true},
			{name: "credentials masked", tool: "team__leak", args: map[string]any{}, want: "ANTHROPIC_API_KEY=sk-***"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, isErr := callText(t, alice, tt.tool, tt.args)
				if !strings.Contains(got, tt.want) || isErr != tt.isError {
					t.Errorf("%s: %q (isError %v), want %q (isError %v)", tt.tool, got, isErr, tt.want, tt.isError)
				}
			})
		}
	})

	t.Run("the result cache is scoped by key", func(t *testing.T) {
		before := g.team.lookups.Load()
		for _, cs := range []*mcp.ClientSession{alice, alice, bob, bob} {
			if got, _ := callText(t, cs, "team__lookup", map[string]any{"key": "cached"}); got != "value-of-cached" {
				t.Fatalf("lookup: %q", got)
			}
		}
		if n := g.team.lookups.Load() - before; n != 2 {
			t.Errorf("the source ran %d times for two keys calling twice each, want 2", n)
		}
		if n := g.counter(t, "gateway_tool_calls_total", map[string]string{"tool": "team__lookup", "outcome": "cached", "via": "mcp"}); n != 2 {
			t.Errorf(`gateway_tool_calls_total{tool="team__lookup",outcome="cached",via="mcp"} = %v, want 2`, n)
		}
	})

	t.Run("progress notifications are passed on", func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		cs := g.mustConnect(t, "sk-alice", &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, fmt.Sprintf("%v %v/%v %s", req.Params.ProgressToken, req.Params.Progress, req.Params.Total, req.Params.Message))
			if len(got) == 3 {
				g.team.progressOnce.Do(func() { close(g.team.progressSeen) })
			}
			mu.Unlock()
		}})
		params := &mcp.CallToolParams{Name: "team__progress", Arguments: map[string]any{}}
		params.SetProgressToken("tok-1")
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []string{"tok-1 1/3 step 1", "tok-1 2/3 step 2", "tok-1 3/3 step 3"}
		if !slices.Equal(got, want) {
			t.Errorf("progress %q, want %q", got, want)
		}
	})

	t.Run("a client's cancel reaches the tool", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "team__block", Arguments: map[string]any{}})
			done <- err
		}()
		select {
		case <-g.team.started:
		case <-time.After(5 * time.Second):
			t.Fatal("the tool did not start")
		}
		cancel()
		select {
		case <-g.team.blocked:
		case <-time.After(2 * time.Second):
			t.Fatal("the tool's context did not end after the client cancelled")
		}
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("CallTool: %v, want context.Canceled", err)
		}
	})

	t.Run("resources and prompts of the key's whole sources", func(t *testing.T) {
		ctx := context.Background()
		rs, err := alice.ListResources(ctx, nil)
		if err != nil || len(rs.Resources) != 1 || rs.Resources[0].Name != "team__readme" || rs.Resources[0].URI != "file:///team/readme.md" {
			t.Fatalf("alice's resources: %v %+v", err, rs)
		}
		rr, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///team/readme.md"})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "# Team\ntoken sk-***" {
			t.Fatalf("read: %v %+v", err, rr)
		}
		ps, err := alice.ListPrompts(ctx, nil)
		if err != nil || len(ps.Prompts) != 1 || ps.Prompts[0].Name != "team__greet" {
			t.Fatalf("alice's prompts: %v %+v", err, ps)
		}
		gp, err := alice.GetPrompt(ctx, &mcp.GetPromptParams{Name: "team__greet", Arguments: map[string]string{"name": "Ada"}})
		if err != nil || len(gp.Messages) != 1 || gp.Messages[0].Content.(*mcp.TextContent).Text != "Say hello to Ada" {
			t.Fatalf("get prompt: %v %+v", err, gp)
		}
		// bob was given one tool of team, not the source: none of its resources or prompts.
		if rs, err := bob.ListResources(ctx, nil); err != nil || len(rs.Resources) != 0 {
			t.Errorf("bob's resources: %v %+v", err, rs)
		}
		if _, err := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///team/readme.md"}); err == nil {
			t.Error("bob read a resource of a source he was not given")
		}
		if _, err := bob.GetPrompt(ctx, &mcp.GetPromptParams{Name: "team__greet", Arguments: map[string]string{"name": "Ada"}}); err == nil {
			t.Error("bob got a prompt of a source he was not given")
		}
	})
}

// TestMCPEndpoint_SessionBelongsToItsKey: a session id is no credential: another key's
// request for it is refused.
func TestMCPEndpoint_SessionBelongsToItsKey(t *testing.T) {
	g := startMCPGateway(t, "")
	alice := g.mustConnect(t, "sk-alice", nil)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`
	for _, tt := range []struct {
		key  string
		want int
	}{{"sk-bob", http.StatusForbidden}, {"sk-alice", http.StatusOK}} {
		req, _ := http.NewRequest("POST", g.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tt.key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", alice.ID())
		req.Header.Set("Mcp-Protocol-Version", alice.InitializeResult().ProtocolVersion)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s on alice's session: %d %s, want %d", tt.key, resp.StatusCode, b, tt.want)
		}
		if tt.want == http.StatusForbidden && strings.Contains(string(b), "team__") {
			t.Errorf("a refused request saw tools: %s", b)
		}
	}
}

// TestMCPEndpoint_SourceRestartedMidSession: while the source is down its tools stay
// listed, a call fails with a clear tool error and /readyz says degraded; once it is back
// the same client session calls it again.
func TestMCPEndpoint_SourceRestartedMidSession(t *testing.T) {
	g := startMCPGateway(t, "")
	alice := g.mustConnect(t, "sk-alice", nil)
	if got, isErr := callText(t, alice, "team__delete", map[string]any{"key": "k"}); got != "deleted" || isErr {
		t.Fatalf("before: %q %v", got, isErr)
	}
	g.team.stop()
	// The first call finds the server gone; the source then reports down and reconnects.
	got, isErr := callText(t, alice, "team__delete", map[string]any{"key": "k"})
	if !isErr || !strings.Contains(got, "tool team__delete failed") {
		t.Errorf("call while down: %q (isError %v)", got, isErr)
	}
	waitFor(t, "the source down", func() bool { return g.Tools.Degraded() != nil })
	if names := toolNamesOf(t, alice); !slices.Contains(names, "team__delete") {
		t.Errorf("tools while the source is down: %v", names)
	}
	resp, err := http.Get(g.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"degraded"`) || !strings.Contains(string(b), `tool source \"team\"`) {
		t.Errorf("/readyz while down: %d %s", resp.StatusCode, b)
	}
	g.team.restart(t)
	waitFor(t, "the source back", func() bool { return g.Tools.Degraded() == nil })
	if got, isErr := callText(t, alice, "team__delete", map[string]any{"key": "k"}); got != "deleted" || isErr {
		t.Errorf("after the restart: %q %v", got, isErr)
	}
}

// TestMCPEndpoint_NodeSDK: the official Node MCP client (testdata/node/mcp.mjs) lists,
// calls (with progress), is refused an unknown tool, reads a resource and gets a prompt,
// then ends its session (DELETE). It needs node and @modelcontextprotocol/sdk in
// AGATE_NODE_MODULES, else ../.ci/npm/node_modules (.ci/run installs it there); without
// them it skips, and fails under CI=true.
func TestMCPEndpoint_NodeSDK(t *testing.T) {
	t.Parallel() // its own gateway and Node process (#54)
	node := gatewaytest.Require(t, "node", "apt-get install nodejs")
	modules := os.Getenv("AGATE_NODE_MODULES")
	if modules == "" {
		modules, _ = filepath.Abs(filepath.Join("..", ".ci", "npm", "node_modules"))
	}
	sdk := filepath.Join(modules, "@modelcontextprotocol", "sdk")
	if _, err := os.Stat(filepath.Join(sdk, "package.json")); err != nil {
		gatewaytest.Missing(t, "the npm package @modelcontextprotocol/sdk is not installed: "+err.Error(), "set AGATE_NODE_MODULES; .ci/run installs it in .ci/npm")
	}
	g := startMCPGateway(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "node", "mcp.mjs"))
	cmd.Env = append(os.Environ(), "AGATE_MCP_URL="+g.URL+"/mcp", "AGATE_KEY=sk-alice", "MCP_SDK_MODULE="+sdk)
	outBytes, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("node: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("node: %v", err)
	}
	var got struct {
		Server     string
		Session    bool
		Tools      []string
		ReadOnly   []string
		Lookup     string
		Progressed string
		Progress   []string
		Invalid    struct {
			IsError bool
			Text    string
		}
		Unknown   string
		Resources []string
		Readme    string
		Prompts   []string
		Prompt    string
	}
	if err := json.Unmarshal(outBytes, &got); err != nil {
		t.Fatalf("node output: %v\n%s", err, outBytes)
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"server and session", got.Server == "agate" && got.Session},
		{"tools", slices.Equal(got.Tools, []string{"clock", "team__ack", "team__block", "team__delete", "team__held", "team__leak", "team__lookup", "team__progress"})},
		{"read-only hints", slices.Equal(got.ReadOnly, []string{"clock", "team__lookup"})},
		{"call", got.Lookup == "value-of-node"},
		{"progress", got.Progressed == "progressed" && slices.Equal(got.Progress, []string{"1/3 step 1", "2/3 step 2", "3/3 step 3"})},
		{"invalid arguments", got.Invalid.IsError && strings.Contains(got.Invalid.Text, "invalid arguments for tool team__delete")},
		{"unknown tool", strings.Contains(got.Unknown, `unknown tool "team__nope"`)},
		{"resources", slices.Equal(got.Resources, []string{"team__readme file:///team/readme.md"}) && got.Readme == "# Team\ntoken sk-***"},
		{"prompts", slices.Equal(got.Prompts, []string{"team__greet"}) && got.Prompt == "Say hello to Node"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: the Node client saw %+v", c.name, got)
		}
	}
}

// TestMCPEndpoint_ClaudeCode: Claude Code headless with the gateway as its MCP server
// (`claude mcp add --transport http`, the key in a header) and as its model (/v1/messages
// on a scripted mock that calls the gateway's tool): the tool's result comes back through
// the endpoint to Claude Code, then to the model, which quotes it.
func TestMCPEndpoint_ClaudeCode(t *testing.T) {
	t.Parallel() // its own gateway and claude process (#54)
	bin := claudeBinary(t)
	g := startMCPGateway(t, `models:
  m-mock:
    backend: offline
    script:
      - tool_calls: [{name: mcp__agate__team__lookup, arguments: {key: claude}}]
`)
	dir := t.TempDir()
	env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + g.URL,
		"ANTHROPIC_API_KEY=sk-alice", "ANTHROPIC_DEFAULT_HAIKU_MODEL=m-mock", "ANTHROPIC_SMALL_FAST_MODEL=m-mock",
		"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_ERROR_REPORTING=1"}
	run := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("claude %s: %v\nstdout %s\nstderr %s", args[0], err, out, stderr)
		}
		return out
	}
	run("mcp", "add", "--scope", "user", "--transport", "http", "agate", g.URL+"/mcp", "--header", "Authorization: Bearer sk-alice")
	out := run("-p", "look the key claude up", "--model", "m-mock", "--output-format", "json",
		"--allowedTools", "mcp__agate__team__lookup", "--max-turns", "4")
	var r claudeResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("claude output: %v\n%s", err, out)
	}
	if r.IsError || !strings.Contains(r.Result, "value-of-claude") || r.NumTurns < 2 {
		t.Errorf("result %+v, want the tool's answer value-of-claude quoted", r)
	}
	if n := g.counter(t, "gateway_tool_calls_total", map[string]string{"tool": "team__lookup", "via": "mcp"}); n != 1 {
		t.Errorf(`gateway_tool_calls_total{tool="team__lookup",via="mcp"} = %v, want 1`, n)
	}
}

// TestMCPEndpoint_StdioSource: a stdio source, the real server-everything, served through
// the endpoint: its tools (progress of its long-running operation passed on), its resource
// templates (a templated URI read) and its prompts.
func TestMCPEndpoint_StdioSource(t *testing.T) {
	t.Parallel() // its own gateway and MCP server process (#54)
	cmd, _ := json.Marshal(everythingCommand(t))
	gw := gatewaytest.StartYAML(t, fmt.Sprintf(`backends:
  offline: {type: mock}
mcp: {enabled: true, path: /tools/mcp}
keys:
  carol: {key: sk-carol, models: ["*"], tools: [everything]}
tools:
  everything: {type: mcp, command: %s}
`, cmd), gatewaytest.Options{Runtime: proxy.TestRuntime, Tools: true})
	g := &mcpGateway{Gateway: gw}
	hc := &http.Client{Transport: bearerTransport{name: "Authorization", value: "Bearer sk-carol", base: http.DefaultTransport}}
	var mu sync.Mutex
	var progress []float64
	client := mcp.NewClient(&mcp.Implementation{Name: "agate-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Progress)
			mu.Unlock()
		}})
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.URL + "/tools/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	names := toolNamesOf(t, cs)
	for _, want := range []string{"everything__echo", "everything__get-sum", "everything__trigger-long-running-operation"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("tools not sorted: %v", names)
	}
	if got, isErr := callText(t, cs, "everything__echo", map[string]any{"message": "hi from mcp"}); got != "Echo: hi from mcp" || isErr {
		t.Errorf("echo: %q (isError %v)", got, isErr)
	}
	params := &mcp.CallToolParams{Name: "everything__trigger-long-running-operation", Arguments: map[string]any{"duration": 0.3, "steps": 3}}
	params.SetProgressToken(42)
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("long-running operation: %v %+v", err, res)
	}
	mu.Lock()
	// The last report is sent right before the result and may trail it (see teamMCP).
	if len(progress) < 2 || progress[0] != 1 || progress[1] != 2 {
		t.Errorf("progress %v, want 1, 2 (and perhaps 3)", progress)
	}
	mu.Unlock()

	tmpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpl.ResourceTemplates) == 0 {
		t.Fatalf("resource templates: %v %+v", err, tmpl)
	}
	for _, rt := range tmpl.ResourceTemplates {
		if !strings.HasPrefix(rt.Name, "everything__") {
			t.Errorf("template %q is not named after its source", rt.Name)
		}
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/7"})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "7") {
		t.Errorf("templated read: %v %+v", err, rr)
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "everything__simple-prompt"})
	if err != nil || len(gp.Messages) != 1 || gp.Messages[0].Content.(*mcp.TextContent).Text != "This is a simple prompt without arguments." {
		t.Errorf("prompt: %v %+v", err, gp)
	}
}

// cutProxy is a TCP proxy to the gateway whose connections the test can cut.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

// cut closes every connection made so far.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestMCPEndpoint_SessionResumed: the connection carrying a call's SSE answer is cut while
// the tool runs; the Go SDK client reconnects to its session with Last-Event-ID and gets
// the answer the gateway kept for it (its event store), in the same session.
func TestMCPEndpoint_SessionResumed(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	g := startMCPGateway(t, "")
	proxy := newCutProxy(t, g.Addr)
	hc := &http.Client{Transport: bearerTransport{name: "Authorization", value: "Bearer sk-alice", base: &http.Transport{}}}
	holding := make(chan struct{})
	var once sync.Once
	client := mcp.NewClient(&mcp.Implementation{Name: "agate-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { once.Do(func() { close(holding) }) }})
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + proxy.ln.Addr().String() + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	session := cs.ID()
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "team__held", Arguments: map[string]any{}}
		params.SetProgressToken("hold")
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			t.Errorf("call across the cut: %v", err)
		}
		done <- res
	}()
	select {
	case <-holding: // the call's SSE stream is open and has carried an event
	case <-time.After(5 * time.Second):
		t.Fatal("no progress from the held tool")
	}
	proxy.cut()
	close(g.team.release)
	select {
	case res := <-done:
		if res == nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "released" {
			t.Errorf("answer after the cut: %+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call never got its answer after the cut")
	}
	if cs.ID() != session {
		t.Errorf("session %q after the cut, want %q", cs.ID(), session)
	}
	if got, _ := callText(t, cs, "team__lookup", map[string]any{"key": "after"}); got != "value-of-after" {
		t.Errorf("a call after the resumption: %q", got)
	}
}

// TestMCPEndpoint_RefusedAtTheDoor: what the gateway refuses before the SDK reads a thing
// is a JSON-RPC error too: no key or a wrong one (401, before the body is read), a body
// over mcp.max_message_bytes (413, bounded as it is read), and the endpoint is off by
// default (404 in the gateway's own shape).
func TestMCPEndpoint_RefusedAtTheDoor(t *testing.T) {
	g := startMCPGateway(t, "")
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("x", 1<<20) + `"}}`
	tests := []struct {
		name, header, body string
		status             int
		want               string
	}{
		{name: "no key", body: initializeBodyE2E, status: 401, want: `"code":-32001,"message":"missing API key`},
		{name: "wrong key", header: "Bearer sk-mallory", body: initializeBodyE2E, status: 401, want: `"code":-32001,"message":"incorrect API key provided"`},
		{name: "oversized", header: "Bearer sk-alice", body: big, status: 413, want: `"code":-32004,"message":"the message exceeds mcp.max_message_bytes (1048576 bytes)"`},
		{name: "not JSON", header: "Bearer sk-alice", body: `{"jsonrpc":`, status: 400, want: `"code":-32700`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", g.URL+"/mcp", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.want) || !strings.Contains(string(b), `"jsonrpc":"2.0"`) {
				t.Errorf("%d %s, want %d with %s", resp.StatusCode, b, tt.status, tt.want)
			}
		})
	}
	t.Run("off by default", func(t *testing.T) {
		off := gatewaytest.StartYAML(t, "backends:\n  offline: {type: mock}\n", gatewaytest.Options{Runtime: proxy.TestRuntime})
		resp, err := http.Post(off.URL+"/mcp", "application/json", strings.NewReader(initializeBodyE2E))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("/mcp with mcp off: %d, want 404", resp.StatusCode)
		}
	})
}

// initializeBodyE2E is the MCP specification's initialize example (basic/lifecycle).
const initializeBodyE2E = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"ExampleClient","version":"1.0.0"}}}`

// TestMCPEndpoint_KeyLimitsPerCall: each tool call through the endpoint is one request of
// the key's limits: past requests_per_minute a call is an isError result naming the limit.
func TestMCPEndpoint_KeyLimitsPerCall(t *testing.T) {
	gw := gatewaytest.StartYAML(t, `backends:
  offline: {type: mock}
mcp: {enabled: true}
keys:
  dave: {key: sk-dave, models: ["*"], tools: [clock], limits: {requests_per_minute: 2}}
tools:
  clock: {type: builtin, name: time_now}
`, gatewaytest.Options{Runtime: proxy.TestRuntime, Tools: true})
	g := &mcpGateway{Gateway: gw}
	cs := g.mustConnect(t, "sk-dave", nil)
	for i, wantErr := range []bool{false, false, true} {
		got, isErr := callText(t, cs, "clock", map[string]any{})
		if isErr != wantErr {
			t.Errorf("call %d: %q (isError %v), want isError %v", i+1, got, isErr, wantErr)
		}
		if wantErr && !strings.Contains(got, "requests_per_minute") && !strings.Contains(got, "limit is reached") {
			t.Errorf("call %d: %q, want the limit named", i+1, got)
		}
	}
	if n := g.counter(t, "gateway_ratelimit_rejections_total", map[string]string{"key": "dave"}); n != 1 {
		t.Errorf("gateway_ratelimit_rejections_total{key=dave} = %v, want 1", n)
	}
}

// TestMCPEndpoint_ExecuteToolSpan: a call through the endpoint has its execute_tool span,
// exported over OTLP like the loop's, with the tool's name and outcome.
func TestMCPEndpoint_ExecuteToolSpan(t *testing.T) {
	recv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	cfg := gatewaytest.Parse(t, `backends:
  offline: {type: mock}
mcp: {enabled: true}
keys:
  dave: {key: sk-dave, models: ["*"], tools: [clock]}
tools:
  clock: {type: builtin, name: time_now}
telemetry: {traces: true}
`)
	tracer, err := telemetry.New(context.Background(), proxy.TelemetryOptions(cfg.Telemetry))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tracer.Shutdown(context.Background()) })
	g := &mcpGateway{Gateway: gatewaytest.Start(t, cfg, gatewaytest.Options{Runtime: proxy.TestRuntime, Tools: true, Tracer: tracer})}
	cs := g.mustConnect(t, "sk-dave", nil)
	if _, isErr := callText(t, cs, "clock", map[string]any{}); isErr {
		t.Fatal("clock failed")
	}
	waitFor(t, "the execute_tool span", func() bool {
		if err := tracer.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
		recv.mu.Lock()
		defer recv.mu.Unlock()
		for _, s := range recv.spans {
			if s.Name != "execute_tool clock" {
				continue
			}
			attrs := map[string]string{}
			for _, a := range s.Attributes {
				attrs[a.Key] = a.Value.GetStringValue()
			}
			if attrs["gen_ai.tool.name"] != "clock" || attrs["agate.tool.outcome"] != "ok" {
				t.Errorf("span attributes %v", attrs)
			}
			return true
		}
		return false
	})
}
