package proxy_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPEndpoint compares, with the MCP Go SDK's client on loopback, a cached
// tools/call round trip through the gateway's /mcp (auth, the SDK's server, the key's
// tool check, the registry's cache) with the same call made directly to the source (the
// tool runs every time).
func BenchmarkMCPEndpoint(b *testing.B) {
	g := startMCPGateway(b, "")
	args := map[string]any{"key": "bench"}
	run := func(b *testing.B, endpoint, bearer string) {
		hc := &http.Client{Transport: bearerTransport{name: "Authorization", value: "Bearer " + bearer, base: http.DefaultTransport}}
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		name := "team__lookup"
		if bearer == "" {
			name = "lookup"
		}
		params := &mcp.CallToolParams{Name: name, Arguments: args}
		if _, err := cs.CallTool(context.Background(), params); err != nil { // warms the cache
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			res, err := cs.CallTool(context.Background(), params)
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	}
	b.Run("cached call through /mcp", func(b *testing.B) { run(b, g.URL+"/mcp", "sk-alice") })
	b.Run("direct call of the source", func(b *testing.B) { run(b, g.team.url(), "") })
}
