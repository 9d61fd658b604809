package tools

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agate-gateway/agate/config"
)

// testMCPServer is an in-process MCP server with a read-only tool, a tool that reports
// isError, and a tool returning non-text content.
type testMCPServer struct {
	server      *mcp.Server
	lookupCalls atomic.Int64
	mu          sync.Mutex
	authHeaders []string
}

type lookupArgs struct {
	Q string `json:"q" jsonschema:"what to look up"`
}

func newTestMCPServer() *testMCPServer {
	s := &testMCPServer{server: mcp.NewServer(&mcp.Implementation{Name: "test-server", Version: "1"}, nil)}
	mcp.AddTool(s.server, &mcp.Tool{
		Name:        "lookup",
		Description: "Looks a word up.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in lookupArgs) (*mcp.CallToolResult, any, error) {
		s.lookupCalls.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "definition of " + in.Q}}}, nil, nil
	})
	s.server.AddTool(&mcp.Tool{
		Name:        "fail",
		Description: "Always fails.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the database is on fire"}}}, nil
	})
	s.server.AddTool(&mcp.Tool{
		Name:        "render",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "chart:"},
			&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3, 4}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "hello notes"}},
		}}, nil
	})
	return s
}

func (s *testMCPServer) httptest(t *testing.T) *httptest.Server {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.server }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.authHeaders = append(s.authHeaders, r.Header.Get("Authorization"))
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func toolNames(defs []Definition) []string {
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	return names
}

func TestMCPStreamableHTTP(t *testing.T) {
	ms := newTestMCPServer()
	srv := ms.httptest(t)
	obs := &recordingObserver{}
	r := newTestRegistry(t, map[string]SourceOptions{
		"srv": {Type: "mcp", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer s3cret"}},
	}, obs)
	ctx := context.Background()

	defs, err := r.Resolve([]string{"srv"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Definition{
		{Name: "srv__fail", Source: "srv", Tool: "fail", Description: "Always fails.", Timeout: DefaultTimeout, MaxResultBytes: DefaultMaxResultBytes},
		{Name: "srv__lookup", Source: "srv", Tool: "lookup", Description: "Looks a word up.", ReadOnly: true, Cacheable: true,
			Timeout: DefaultTimeout, MaxResultBytes: DefaultMaxResultBytes},
		{Name: "srv__render", Source: "srv", Tool: "render", Timeout: DefaultTimeout, MaxResultBytes: DefaultMaxResultBytes},
	}
	if diff := cmp.Diff(want, defs, cmpopts.IgnoreFields(Definition{}, "Parameters")); diff != "" {
		t.Errorf("Resolve mismatch (-want +got):\n%s", diff)
	}

	t.Run("calls", func(t *testing.T) {
		tests := []struct {
			name        string
			tool, args  string
			want        Result
			wantOutcome string
		}{
			{name: "read-only tool", tool: "srv__lookup", args: `{"q":"agate"}`, want: Result{Content: "definition of agate"}, wantOutcome: OutcomeOK},
			{name: "cached", tool: "srv__lookup", args: `{ "q": "agate" }`, want: Result{Content: "definition of agate"}, wantOutcome: OutcomeCached},
			{name: "isError", tool: "srv__fail", args: `{}`, want: Result{Content: "the database is on fire", IsError: true}, wantOutcome: OutcomeError},
			{name: "non-text content", tool: "srv__render", args: `{}`,
				want: Result{Content: "chart:\n[image: image/png, 4 bytes]\n[resource: file:///notes.txt]\nhello notes"}, wantOutcome: OutcomeOK},
			{name: "arguments checked against the server's schema", tool: "srv__lookup", args: `{"q":7}`,
				want: Result{IsError: true, Content: "invalid arguments for tool srv__lookup: at /q: got number, want string"}, wantOutcome: OutcomeInvalidArguments},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if diff := cmp.Diff(tt.want, r.Call(ctx, tt.tool, []byte(tt.args))); diff != "" {
					t.Errorf("Call mismatch (-want +got):\n%s", diff)
				}
				if got := obs.lastCall().Outcome; got != tt.wantOutcome {
					t.Errorf("outcome = %q, want %q", got, tt.wantOutcome)
				}
			})
		}
		if got := ms.lookupCalls.Load(); got != 1 {
			t.Errorf("lookup ran %d times on the server, want 1", got)
		}
	})

	t.Run("headers", func(t *testing.T) {
		ms.mu.Lock()
		defer ms.mu.Unlock()
		if len(ms.authHeaders) == 0 || slices.ContainsFunc(ms.authHeaders, func(h string) bool { return h != "Bearer s3cret" }) {
			t.Errorf("Authorization headers seen by the server = %q, want all %q", ms.authHeaders, "Bearer s3cret")
		}
	})

	t.Run("list changed", func(t *testing.T) {
		ms.server.AddTool(&mcp.Tool{Name: "added", Description: "Added at runtime.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "new tool works"}}}, nil
			})
		waitFor(t, "the registry to see the added tool", 10*time.Second, func() bool {
			defs, err := r.Resolve([]string{"srv/added"})
			return err == nil && len(defs) == 1
		})
		if diff := cmp.Diff(Result{Content: "new tool works"}, r.Call(ctx, "srv__added", nil)); diff != "" {
			t.Errorf("Call mismatch (-want +got):\n%s", diff)
		}
		ms.server.RemoveTools("fail")
		waitFor(t, "the registry to drop the removed tool", 10*time.Second, func() bool {
			defs, _ := r.Resolve([]string{"srv"})
			return !slices.Contains(toolNames(defs), "srv__fail")
		})
		if res := r.Call(ctx, "srv__fail", nil); !res.IsError || !strings.Contains(res.Content, "unknown tool") {
			t.Errorf("Call of removed tool = %+v, want an unknown-tool error", res)
		}
	})

	if err := r.anyDown(); err != nil {
		t.Errorf("Ready = %v, want nil", err)
	}
}

func TestMCP_DuplicateModelFacingName(t *testing.T) {
	srv := newTestMCPServer().httptest(t)
	_, err := New(context.Background(), map[string]SourceOptions{
		"srv":         {Type: "mcp", URL: srv.URL},
		"srv__lookup": {Type: "builtin", Name: "time_now"},
	}, CacheOptions{}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), `model-facing name "srv__lookup" is already used`) {
		t.Errorf("New error = %v, want a duplicate name error", err)
	}
}

func TestRenderCallResult(t *testing.T) {
	size := int64(42)
	tests := []struct {
		name string
		in   *mcp.CallToolResult
		want Result
	}{
		{name: "texts joined", in: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}},
			want: Result{Content: "a\nb"}},
		{name: "error", in: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad"}}},
			want: Result{Content: "bad", IsError: true}},
		{name: "audio", in: &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 10)}}},
			want: Result{Content: "[audio: audio/wav, 10 bytes]"}},
		{name: "resource link", in: &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{Name: "readme", URI: "file:///README.md",
			MIMEType: "text/markdown", Description: "the readme", Size: &size}}},
			want: Result{Content: "[resource link: readme file:///README.md (text/markdown): the readme]"}},
		{name: "blob resource", in: &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "file:///a.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2}}}}},
			want: Result{Content: "[resource: file:///a.bin, application/octet-stream, 2 bytes]"}},
		{name: "structured only", in: &mcp.CallToolResult{StructuredContent: map[string]any{"t": 21}},
			want: Result{Content: `{"t":21}`}},
		{name: "empty", in: &mcp.CallToolResult{}, want: Result{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, renderCallResult(tt.in)); diff != "" {
				t.Errorf("renderCallResult mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// helperServerEnv makes the test binary act as a stdio MCP server (see TestMain).
const helperServerEnv = "AGATE_TOOLS_TEST_MCP_SERVER"

// helperGORACE is the GORACE of a helper server: a stdio server gets only the variables
// it is given, and a -race binary otherwise sleeps 1 s at exit (atexit_sleep_ms), which
// every stop of a source waits for (#54). Races are reported as before.
const helperGORACE = "atexit_sleep_ms=0"

// helperRefuseEnv names a file whose presence makes the helper server exit at once, to
// simulate a server that cannot restart.
const helperRefuseEnv = "AGATE_TOOLS_TEST_MCP_REFUSE_FILE"

func TestMain(m *testing.M) {
	if os.Getenv(helperServerEnv) == "1" {
		runHelperServer()
		return
	}
	os.Exit(m.Run())
}

// runHelperServer serves a tiny MCP server over stdin/stdout.
func runHelperServer() {
	if f := os.Getenv(helperRefuseEnv); f != "" {
		if _, err := os.Stat(f); err == nil {
			os.Exit(3)
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "helper", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Message string `json:"message"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			env := map[string]string{}
			for _, kv := range os.Environ() {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			js, _ := json.Marshal(env)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(js)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// stdioProcess returns the running server process of an MCP source.
func stdioProcess(t *testing.T, r *Registry, source string) *os.Process {
	t.Helper()
	s := r.sources[source].src.(*mcpSource)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process
}

func TestMCPStdio_CrashAndRestart(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	refuse := t.TempDir() + "/refuse"
	obs := &recordingObserver{}
	r := newTestRegistry(t, map[string]SourceOptions{
		"helper": {Type: "mcp", Command: []string{exe}, Env: map[string]string{helperServerEnv: "1", helperRefuseEnv: refuse, "GORACE": helperGORACE},
			Overrides: map[string]Override{"pid": {Timeout: 500 * time.Millisecond}}},
	}, obs)
	ctx := context.Background()
	echo := func() Result { return r.Call(ctx, "helper__echo", []byte(`{"message":"hi"}`)) }
	if diff := cmp.Diff(Result{Content: "hi"}, echo()); diff != "" {
		t.Fatalf("echo mismatch (-want +got):\n%s", diff)
	}
	if err := r.anyDown(); err != nil {
		t.Fatalf("Ready = %v", err)
	}

	// The server dies and cannot come back for now.
	if err := os.WriteFile(refuse, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	first := stdioProcess(t, r, "helper")
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Ready to report the server down", 10*time.Second, func() bool { return r.anyDown() != nil })
	t.Logf("Ready while down: %v", r.anyDown())
	if err := r.anyDown(); !strings.Contains(err.Error(), `tool source "helper"`) {
		t.Errorf("Ready = %v, want it to name the source", err)
	}
	// A call while down ends within its timeout with an error result.
	start := time.Now()
	res := r.Call(ctx, "helper__pid", nil)
	if !res.IsError {
		t.Errorf("Call while down = %+v, want an error result", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Call while down took %v, want it bounded by the tool timeout", d)
	}
	t.Logf("Call while down: %q after %v", res.Content, time.Since(start))

	// The server can start again: the backoff loop brings it back.
	if err := os.Remove(refuse); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server to be restarted", 60*time.Second, func() bool { return r.anyDown() == nil })
	if diff := cmp.Diff(Result{Content: "hi"}, echo()); diff != "" {
		t.Errorf("echo after restart mismatch (-want +got):\n%s", diff)
	}
	if second := stdioProcess(t, r, "helper"); second.Pid == first.Pid {
		t.Errorf("server process not replaced (pid %d)", first.Pid)
	}
}

// everythingServer finds the @modelcontextprotocol/server-everything binary. Without it
// the test skips, unless CI=true, where it fails: CI installs it.
func everythingServer(t *testing.T) []string {
	t.Helper()
	if bin, err := exec.LookPath("mcp-server-everything"); err == nil {
		return []string{bin, "stdio"}
	}
	msg := "mcp-server-everything not found in PATH; install it with: npm install -g @modelcontextprotocol/server-everything"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return nil
}

func TestMCPStdio_Everything(t *testing.T) {
	cmd := everythingServer(t)
	obs := &recordingObserver{}
	r := newTestRegistry(t, map[string]SourceOptions{"everything": {Type: "mcp", Command: cmd}}, obs)
	defs, err := r.Resolve([]string{"everything"})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		t.Logf("tool %-45s read-only=%-5v params=%s", d.Name, d.ReadOnly, d.Parameters)
	}
	if !slices.Contains(toolNames(defs), "everything__echo") {
		t.Fatalf("tools %v lack everything__echo", toolNames(defs))
	}
	ctx := context.Background()
	tests := []struct {
		name        string
		tool, args  string
		wantIn      string
		wantError   bool
		wantOutcome string
	}{
		{name: "echo", tool: "everything__echo", args: `{"message":"hello from agate"}`, wantIn: "hello from agate", wantOutcome: OutcomeOK},
		{name: "echo missing argument", tool: "everything__echo", args: `{}`, wantIn: "missing property 'message'", wantError: true, wantOutcome: OutcomeInvalidArguments},
		{name: "get-sum", tool: "everything__get-sum", args: `{"a":2,"b":3}`, wantIn: "5", wantOutcome: OutcomeOK},
		{name: "get-sum served from cache", tool: "everything__get-sum", args: `{"b":3, "a":2}`, wantIn: "5", wantOutcome: OutcomeCached},
		{name: "enum checked locally", tool: "everything__get-structured-content", args: `{"location":"Paris"}`,
			wantIn: "at /location: value must be one of", wantError: true, wantOutcome: OutcomeInvalidArguments},
		{name: "image rendered as text", tool: "everything__get-tiny-image", args: `{}`, wantIn: "[image: image/png, ", wantOutcome: OutcomeOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Contains(toolNames(defs), tt.tool) {
				t.Skipf("this version of server-everything has no %s", tt.tool)
			}
			res := r.Call(ctx, tt.tool, []byte(tt.args))
			t.Logf("%s(%s) = %+v", tt.tool, tt.args, res)
			if res.IsError != tt.wantError || !strings.Contains(res.Content, tt.wantIn) {
				t.Errorf("Call = %+v, want IsError=%v and content containing %q", res, tt.wantError, tt.wantIn)
			}
			if got := obs.lastCall().Outcome; got != tt.wantOutcome {
				t.Errorf("outcome = %q, want %q", got, tt.wantOutcome)
			}
		})
	}
	single, err := r.Resolve([]string{"everything/echo"})
	if err != nil || len(single) != 1 || single[0].Name != "everything__echo" {
		t.Errorf("Resolve(everything/echo) = %v, %v", toolNames(single), err)
	}
	if err := r.anyDown(); err != nil {
		t.Errorf("Ready = %v", err)
	}
}

// TestMCP_Redirects: a streamable-HTTP MCP server may redirect within its own scheme and
// host; a redirect elsewhere fails the connection before the target sees a request (the
// configured headers, often a secret, would go with it).
func TestMCP_Redirects(t *testing.T) {
	tests := []struct {
		name        string
		crossOrigin bool
	}{
		{name: "same origin followed"},
		{name: "other origin refused", crossOrigin: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := newTestMCPServer()
			target := ms.httptest(t)
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms.server }, nil)
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/mcp/" {
					h.ServeHTTP(w, r)
					return
				}
				loc := "/mcp/"
				if tt.crossOrigin {
					loc = target.URL + "/mcp/?token=loc-secret"
				}
				http.Redirect(w, r, loc, http.StatusTemporaryRedirect)
			}))
			defer front.Close()
			r, err := New(context.Background(), map[string]SourceOptions{
				"srv": {Type: "mcp", URL: front.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"}, Required: true},
			}, CacheOptions{}, nil, nil)
			if !tt.crossOrigin {
				if err != nil {
					t.Fatalf("New = %v", err)
				}
				defer r.Close()
				if diff := cmp.Diff(Result{Content: "definition of x"}, r.Call(context.Background(), "srv__lookup", []byte(`{"q":"x"}`))); diff != "" {
					t.Errorf("Call mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil {
				r.Close()
				t.Fatal("New followed a redirect to another origin")
			}
			if strings.Contains(err.Error(), "loc-secret") {
				t.Errorf("New error leaks the Location: %v", err)
			}
			ms.mu.Lock()
			defer ms.mu.Unlock()
			if len(ms.authHeaders) != 0 {
				t.Errorf("the redirect target received %d requests, want none", len(ms.authHeaders))
			}
		})
	}
}

// TestMCPStdio_Environment: a stdio MCP server does not get the gateway's environment,
// where the upstream keys and the secrets the config names live: only PATH, HOME, the
// locale and the like, the variables env_passthrough names and those env sets (expanded
// from ${VAR} like any config string). Checked with a Go server and, when installed, the
// reference server whose get-env tool returns its whole environment to the model.
func TestMCPStdio_Environment(t *testing.T) {
	// The gateway's own environment: an upstream key, another client's key, the metrics
	// bearer, and the variables the config passes on or refers to.
	secrets := map[string]string{
		"ANTHROPIC_API_KEY":        "sk-ant-api03-gatewayUpstreamSecret0123456789",
		"AGATE_TEST_ALICE_KEY":     "alice-client-key-2c1f",
		"AGATE_TEST_METRICS_TOKEN": "metrics-bearer-77aa",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("AGATE_TEST_PASSED", "passed-value")
	t.Setenv("AGATE_TEST_FROM_CONFIG", "expanded-value")
	t.Setenv("LC_TIME", "C")

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	servers := []struct {
		name, tool string
		command    func(t *testing.T) []string
	}{
		{name: "go helper", tool: "env", command: func(*testing.T) []string { return []string{exe} }},
		{name: "server-everything get-env", tool: "get-env", command: everythingServer},
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			cmd, _ := json.Marshal(srv.command(t))
			doc := `
backends: {offline: {type: mock}}
tools:
  s:
    type: mcp
    command: ` + string(cmd) + `
    env: {AGATE_TEST_SET: "${AGATE_TEST_FROM_CONFIG}", ` + helperServerEnv + `: "1", GORACE: ` + helperGORACE + `}
    env_passthrough: [AGATE_TEST_PASSED, AGATE_TEST_UNSET]
`
			cfg, err := config.Parse([]byte(doc), os.Environ())
			if err != nil {
				t.Fatal(err)
			}
			s := cfg.Tools["s"] // the env as config expands it, given to the source as it is
			r := newTestRegistry(t, map[string]SourceOptions{"s": {Type: s.Type, Command: s.Command, Env: s.Env, EnvPassthrough: s.EnvPassthrough}}, nil)
			res := r.Call(context.Background(), "s__"+srv.tool, []byte(`{}`))
			if res.IsError {
				t.Fatalf("%s: %+v", srv.tool, res)
			}
			var env map[string]string
			if err := json.Unmarshal([]byte(res.Content), &env); err != nil {
				t.Fatalf("%s result is not a JSON object: %v\n%s", srv.tool, err, res.Content)
			}
			for name, value := range secrets {
				if _, ok := env[name]; ok || strings.Contains(res.Content, value) {
					t.Errorf("the server got the gateway's %s", name)
				}
			}
			want := map[string]string{
				"PATH":              os.Getenv("PATH"),
				"LC_TIME":           "C",
				"AGATE_TEST_SET":    "expanded-value",
				"AGATE_TEST_PASSED": "passed-value",
			}
			for name, value := range want {
				if env[name] != value {
					t.Errorf("%s = %q, want %q", name, env[name], value)
				}
			}
			if v, ok := env["AGATE_TEST_UNSET"]; ok {
				t.Errorf("AGATE_TEST_UNSET (not set in the gateway) = %q, want it absent", v)
			}
			if v, ok := env["AGATE_TEST_FROM_CONFIG"]; ok {
				t.Errorf("AGATE_TEST_FROM_CONFIG (only referred to by the config) = %q, want it absent", v)
			}
		})
	}
}

// TestStdioEnv pins the environment a stdio server starts with: base variables and the
// named ones from the gateway's, then env, which wins.
func TestStdioEnv(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/home/a", "SECRET=s", "LC_ALL=C.UTF-8", "LCX=no", "KEEP=k", "HOMEX=no", "=weird", "NOEQUALS"}
	got := stdioEnv(environ, []string{"KEEP", "ABSENT"}, map[string]string{"PATH": "/opt/bin", "B": "2", "A": "1"})
	want := []string{"PATH=/bin", "HOME=/home/a", "LC_ALL=C.UTF-8", "KEEP=k", "A=1", "B=2", "PATH=/opt/bin"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stdioEnv (-want +got):\n%s", diff)
	}
}

// TestCall_ResultsMasked: a tool result passes through the credential masking of upstream
// errors before the model sees it, unless the source sets mask_results: false.
func TestCall_ResultsMasked(t *testing.T) {
	ms := newTestMCPServer()
	srv := ms.httptest(t)
	const leak = "key sk-proj-Zx81Qw27Er64Ty39Ui05 and Bearer tok3n.V4lue"
	tests := []struct {
		name string
		mask *bool
		want string
	}{
		{name: "default", want: "definition of key sk-*** and Bearer ***"},
		{name: "mask_results true", mask: ptr(true), want: "definition of key sk-*** and Bearer ***"},
		{name: "mask_results false", mask: ptr(false), want: "definition of " + leak},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRegistry(t, map[string]SourceOptions{"srv": {Type: "mcp", URL: srv.URL, MaskResults: tt.mask}}, nil)
			args, _ := json.Marshal(map[string]string{"q": leak})
			got := r.Call(context.Background(), "srv__lookup", args)
			if diff := cmp.Diff(Result{Content: tt.want}, got); diff != "" {
				t.Errorf("Call (-want +got):\n%s", diff)
			}
		})
	}
}
