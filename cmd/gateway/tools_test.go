package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agate-gateway/agate/config"
)

// mcpServerEnv makes the test binary a stdio MCP server with one tool, greet (TestMain).
const mcpServerEnv = "AGATE_GATEWAY_TEST_MCP_SERVER"

// runAsMCPServer makes the test binary the greet MCP server when mcpServerEnv is set
// (TestMain calls it first): it serves stdio and exits.
func runAsMCPServer() {
	if os.Getenv(mcpServerEnv) == "1" {
		s := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets someone."},
			func(_ context.Context, _ *mcp.CallToolRequest, in struct {
				Name string `json:"name"`
			}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + in.Name}}}, nil, nil
			})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// writeMCPServer writes an executable script at path that runs the test binary as the
// greet MCP server.
func writeMCPServer(t *testing.T, path string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".tmp", []byte("#!/bin/sh\nexec '"+exe+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// greeterSource is the YAML of a tool source running the script at path. GORACE: the
// server gets only the variables it is given, and a -race binary otherwise sleeps 1 s at
// exit, which a reload or shutdown stopping the source waits for (#54).
func greeterSource(name, path string) string {
	return fmt.Sprintf("  %s: {type: mcp, command: [%q], env: {%s: \"1\", GORACE: \"atexit_sleep_ms=0\"}}\n", name, path, mcpServerEnv)
}

// chat asks the mock model demo with key and returns the status and the answer's text.
func chat(t *testing.T, addr, key, prompt string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions",
		strings.NewReader(`{"model":"demo","messages":[{"role":"user","content":"`+prompt+`"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &body); err != nil || len(body.Choices) == 0 {
		return resp.StatusCode, string(b)
	}
	return resp.StatusCode, body.Choices[0].Message.Content
}

// readyz returns /readyz's status and body.
func readyz(t *testing.T, addr string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRun_ReloadAddsToolSource: one edit that adds an MCP tool source and a key that uses
// it is applied whole (the source is started before the keys are checked), without a
// restart warning, and the key's tool loop calls the new server.
func TestRun_ReloadAddsToolSource(t *testing.T) {
	dir := t.TempDir()
	server := filepath.Join(dir, "greeter")
	writeMCPServer(t, server)
	path := filepath.Join(dir, "agate.yaml")
	writeAtomically(t, path, baseConfig)
	g := startRun(t, []string{"-config", path}, nil)
	defer g.stop(t)

	writeAtomically(t, path, baseConfig+"keys:\n  agent: {key: sk-agent, models: [\"*\"], tools: [greeter]}\ntools:\n"+greeterSource("greeter", server))
	eventually(t, "the reload to be counted", func() bool { return reloads(t, g.addr, "success") == 1 || reloads(t, g.addr, "failure") == 1 })
	if got := reloads(t, g.addr, "success"); got != 1 {
		t.Fatalf("the edit was refused:\n%s", g.stderr.String())
	}
	if status, answer := chat(t, g.addr, "sk-agent", "use greeter__greet"); status != 200 || !strings.HasPrefix(answer, "Tool results: hello ") {
		t.Errorf("chat = %d %q, want the greet tool's result", status, answer)
	}
	eventually(t, "the reload in the log", func() bool { return strings.Contains(g.stderr.String(), `"msg":"config reloaded"`) })
	if strings.Contains(g.stderr.String(), "take effect after a restart") {
		t.Errorf("a restart warning for a reload that applies everything:\n%s", g.stderr.String())
	}

	// Removing the source and the key's use of it, in one edit, is one reload too.
	writeAtomically(t, path, baseConfig+"keys:\n  agent: {key: sk-agent, models: [\"*\"]}\n")
	eventually(t, "the second reload to be counted", func() bool { return reloads(t, g.addr, "success") == 2 || reloads(t, g.addr, "failure") == 1 })
	if got := reloads(t, g.addr, "success"); got != 2 {
		t.Fatalf("the removal was refused:\n%s", g.stderr.String())
	}
	eventually(t, "the source's stop in the log", func() bool {
		return strings.Contains(g.stderr.String(), `"msg":"tool source stopped","tool_source":"greeter"`)
	})
	if status, answer := chat(t, g.addr, "sk-agent", "use greeter__greet"); status != 200 || answer != "use greeter__greet" {
		t.Errorf("chat after the removal = %d %q, want the mock's echo", status, answer)
	}
}

// TestRun_ToolServerMissingAtStart: a tool source whose MCP server cannot be started does
// not stop the gateway: chat is served (a key listing the source gets no tools meanwhile),
// /readyz answers 200 "degraded" naming the source, and once the program exists the background
// retries bring it up and the tool loop uses it. With required: true the start fails
// naming the source.
func TestRun_ToolServerMissingAtStart(t *testing.T) {
	dir := t.TempDir()
	server := filepath.Join(dir, "greeter")
	cfg := baseConfig + "keys:\n  agent: {key: sk-agent, models: [\"*\"], tools: [greeter, greeter/greet]}\ntools:\n" + greeterSource("greeter", server)
	path := filepath.Join(dir, "agate.yaml")
	writeAtomically(t, path, cfg)

	required := filepath.Join(dir, "required.yaml")
	writeAtomically(t, required, strings.Replace(cfg, "type: mcp,", "type: mcp, required: true,", 1))
	err := run([]string{"-config", required}, nil, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), `tools: starting tool source "greeter"`) || !strings.Contains(err.Error(), server) {
		t.Errorf("start with a required source missing: %v, want an error naming the source and the program", err)
	}

	g := startRun(t, []string{"-config", path}, nil)
	defer g.stop(t)
	if status, answer := chat(t, g.addr, "sk-agent", "use greeter__greet"); status != 200 || answer != "use greeter__greet" {
		t.Errorf("chat while the tool server is down = %d %q, want the mock's echo", status, answer)
	}
	if status, body := readyz(t, g.addr); status != 200 || !strings.Contains(body, `"degraded"`) || !strings.Contains(body, `tool source \"greeter\"`) {
		t.Errorf("/readyz while down = %d %s, want 200 degraded naming the source (chat is served: the replica stays in rotation)", status, body)
	}
	eventually(t, "the start failure in the log", func() bool { return strings.Contains(g.stderr.String(), `"msg":"tool source did not start`) })
	if line := logLine(g.stderr.String(), "tool source did not start"); !strings.Contains(line, `"tool_source":"greeter"`) || !strings.Contains(line, "no such file") {
		t.Errorf("the start failure's log line does not name the source and the cause: %s", line)
	}

	writeMCPServer(t, server)
	eventually(t, "/readyz to be ready", func() bool { status, _ := readyz(t, g.addr); return status == 200 })
	eventually(t, "the tool loop to use the server", func() bool {
		_, answer := chat(t, g.addr, "sk-agent", "use greeter__greet")
		return strings.HasPrefix(answer, "Tool results: hello ")
	})
}

// logLine returns the first line of log holding msg.
func logLine(log, msg string) string {
	lines := strings.Split(log, "\n")
	if i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, msg) }); i >= 0 {
		return lines[i]
	}
	return ""
}

// TestNeedRestart: the restart warning names exactly the sections that changed and that a
// reload cannot apply; tool sources, keys, models and log.level are applied.
func TestNeedRestart(t *testing.T) {
	const tools = "tools:\n  clock: {type: builtin, name: time_now}\n"
	const base = baseConfig + tools
	tests := []struct {
		name string
		next string
		want []string
	}{
		{name: "nothing changed", next: base},
		{name: "tool sources and models", next: baseConfig + "  fresh: {backend: offline}\n" + strings.Replace(tools, "clock:", "time:", 1)},
		{name: "log level", next: strings.Replace(base, "level: debug", "level: info", 1)},
		{name: "log format", next: strings.Replace(base, "level: debug", "level: debug, format: text", 1), want: []string{"log.format"}},
		{name: "server", next: strings.Replace(base, "shutdown_timeout: 5s", "shutdown_timeout: 6s", 1), want: []string{"server"}},
		{name: "two sections", next: strings.Replace(base, "shutdown_timeout: 5s", "shutdown_timeout: 6s", 1) + "cache: {ttl: 1m}\n",
			want: []string{"server", "cache"}},
	}
	running, err := config.Parse([]byte(base), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, err := config.Parse([]byte(tt.next), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := needRestart(running, next); !slices.Equal(got, tt.want) {
				t.Errorf("needRestart = %q, want %q", got, tt.want)
			}
		})
	}
}
