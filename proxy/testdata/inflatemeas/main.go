// Command inflatemeas measures what issue 45 item 1 measured: the bytes a gateway binary
// sends to a fake Anthropic upstream on loopback for a small request whose carried state
// inflates (eight ~11 KB sealed blobs in /v1/responses, three hundred of them, or four
// ~11 KB carry ids in a chat request), and the gateway's peak RSS (VmHWM) after it.
//
//	go build -o /tmp/gw ./cmd/gateway
//	go run ./proxy/testdata/inflatemeas -gw /tmp/gw -case blobs   # or blobs300, ids
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agate-gateway/agate/translate"
)

func main() {
	gw := flag.String("gw", "", "gateway binary")
	which := flag.String("case", "blobs", "blobs | blobs300 | ids")
	flag.Parse()
	var upBytes atomic.Int64
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		upBytes.Add(n)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	gl, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := gl.Addr().String()
	gl.Close()
	cfg := fmt.Sprintf(`server: {listen: %q}
log: {level: error}
backends:
  claude: {type: anthropic, base_url: "http://%s", api_key: k, retries: {max: 0}}
models:
  m-claude: {backend: claude, upstream_model: claude-x, max_tokens: 64}
keys:
  client: {key: client-key, models: ["*"]}
`, addr, ln.Addr())
	os.WriteFile("/tmp/inflatemeas.yaml", []byte(cfg), 0o600)
	cmd := exec.Command(*gw, "-config", "/tmp/inflatemeas.yaml")
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	defer cmd.Process.Kill()
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	const state = 8<<20 - 64
	var path, body string
	switch *which {
	case "blobs", "blobs300": // eight (300) sealed blobs in /v1/responses
		n := 8
		if *which == "blobs300" {
			n = 300
		}
		var items []string
		s := translate.SealBlock(&translate.ThinkingBlock{Dialect: "anthropic", Type: "thinking", Thinking: strings.Repeat("a", state), Signature: "sig"})
		for range n {
			items = append(items, fmt.Sprintf(`{"type":"reasoning","summary":[],"encrypted_content":%q},{"role":"assistant","content":"ok"}`, s))
		}
		path = "/v1/responses"
		body = `{"model":"m-claude","store":false,"reasoning":{"effort":"low"},"input":[{"role":"user","content":"go"},` + strings.Join(items, ",") + `,{"role":"user","content":"on"}]}`
	case "ids": // four carry ids in a chat request
		var calls, results []string
		for i := range 4 {
			id := translate.CarryID(fmt.Sprintf("toolu_%d", i), []byte(`[{"type":"thinking","thinking":"`+strings.Repeat("a", state-64)+`","signature":"sig"}]`))
			calls = append(calls, fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":"f","arguments":"{}"}}`, id))
			results = append(results, fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":"r"}`, id))
		}
		path = "/v1/chat/completions"
		body = `{"model":"m-claude","reasoning_effort":"low","messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[` + strings.Join(calls, ",") + `]},` + strings.Join(results, ",") + `],"tools":[{"type":"function","function":{"name":"f"}}]}`
	}
	req, _ := http.NewRequest("POST", "http://"+addr+path, bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer client-key")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	out, _ := io.ReadAll(resp.Body)
	if len(out) > 300 {
		out = out[:300]
	}
	st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	hwm := ""
	for _, l := range strings.Split(string(st), "\n") {
		if strings.HasPrefix(l, "VmHWM") {
			hwm = strings.Join(strings.Fields(l)[1:], " ")
		}
	}
	fmt.Printf("case %s: request %d bytes -> %d %s\n  sent upstream: %d bytes; gateway peak RSS (VmHWM): %s\n", *which, len(body), resp.StatusCode, out, upBytes.Load(), hwm)
}
