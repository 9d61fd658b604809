package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawChat is one chat completions request as a client writes it on its connection.
func rawChat(extraHeader string) string {
	body := `{"model":"demo","messages":[{"role":"user","content":"hi"}]}`
	return "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer sk-alice\r\n" +
		"Content-Type: application/json\r\n" + extraHeader + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// accessLines returns the "chat completion" records in logs.
func accessLines(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(logs, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "chat completion" {
			out = append(out, rec)
		}
	}
	return out
}

// heldLog is a log output whose writes of the access line wait until release is closed.
type heldLog struct {
	syncBuffer
	release chan struct{}
}

func (h *heldLog) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"chat completion"`)) {
		<-h.release
	}
	return h.syncBuffer.Write(p)
}

// TestAnswerRecord_AfterTheAnswer: a non-streamed answer reaches the client before its
// access line is written: with the log output held, the answer still arrives, and the
// line follows once the output is released.
func TestAnswerRecord_AfterTheAnswer(t *testing.T) {
	out := &heldLog{release: make(chan struct{})}
	g := startGatewayWith(t, demoConfig, nil, gatewayOptions{logOut: out})
	answered := make(chan httpResult, 1)
	go func() { answered <- g.chat("sk-alice", `{"model":"demo","messages":[{"role":"user","content":"hi"}]}`) }()
	select {
	case r := <-answered:
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
	case <-time.After(10 * time.Second):
		close(out.release)
		t.Fatal("the answer waited for its access line")
	}
	close(out.release)
	g.srv.Settle()
	lines := accessLines(t, out.String())
	if len(lines) != 1 || lines[0]["status"] != float64(200) || lines[0]["model"] != "demo" {
		t.Fatalf("access lines after Settle = %v, want the one of the answer", lines)
	}
	if got := g.metricValue("gateway_requests_total", map[string]string{"model": "demo", "code": "200"}); got != 1 {
		t.Errorf("gateway_requests_total = %v, want 1", got)
	}
}

// TestAnswerRecord_EveryAnswerRecorded: whatever ends the wait for the next request on a
// connection, every answer on it is counted and logged once: the next request, a client
// that pipelines two requests in one write, and a connection the server closes after its
// answer (Connection: close), whose record is made before the client sees it closed.
func TestAnswerRecord_EveryAnswerRecorded(t *testing.T) {
	tests := []struct {
		name   string
		writes []string // each written once the answers to the one before are read
		settle bool     // Server.Settle before counting; false: the close has recorded
		want   int
	}{
		{name: "one request after another", writes: []string{rawChat(""), rawChat(""), rawChat("")}, settle: true, want: 3},
		{name: "two pipelined requests", writes: []string{rawChat("") + rawChat("")}, settle: true, want: 2},
		{name: "closed after the answer", writes: []string{rawChat("Connection: close\r\n")}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startGateway(t, demoConfig, nil)
			conn, err := net.Dial("tcp", strings.TrimPrefix(g.base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(conn)
			for _, w := range tt.writes {
				if _, err := io.WriteString(conn, w); err != nil {
					t.Fatal(err)
				}
				for range strings.Count(w, "POST ") {
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						t.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						t.Fatalf("status %d", resp.StatusCode)
					}
				}
			}
			if !tt.settle {
				if _, err := br.ReadByte(); err != io.EOF {
					t.Fatalf("after the answer: %v, want the server's close", err)
				}
				if got := gatheredValue(t, g.reg, "gateway_requests_total", map[string]string{"model": "demo"}); got != float64(tt.want) {
					t.Fatalf("gateway_requests_total once closed = %v, want %d", got, tt.want)
				}
			}
			if got := g.metricValue("gateway_requests_total", map[string]string{"model": "demo"}); got != float64(tt.want) {
				t.Errorf("gateway_requests_total = %v, want %d", got, tt.want)
			}
			lines := accessLines(t, g.logText())
			ids := map[any]bool{}
			for _, l := range lines {
				ids[l["request_id"]] = true
			}
			if len(lines) != tt.want || len(ids) != tt.want {
				t.Errorf("%d access lines (%d request ids), want %d", len(lines), len(ids), tt.want)
			}
		})
	}
}
