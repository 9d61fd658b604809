package proxy_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// Continuation on the clouds (config.ContinuationDialect): Claude on Vertex AI
// (streamRawPredict) and on Bedrock (InvokeModelWithResponseStream), and Gemini on
// Vertex, default to prefill. The fakes are choppy's answers behind each cloud's door:
// Vertex's checks the OAuth2 bearer the token endpoint granted and the publisher path;
// Bedrock's recomputes the SigV4 signature with the SDK's signer and wraps each of
// Claude's events in an event-stream chunk frame ({"bytes":"<base64>"}, as
// InvokeModelWithResponseStream sends them, testdata/cloudclaude), a mid-stream error
// being the recorded modelStreamErrorException frame (bedrockStreamError) and a refusal
// Bedrock's ValidationException. Each checks that the body it gets is the cloud's:
// anthropic_version in the body, no model (the URL names it), and on Bedrock no stream.
// The cloud "converse" is Bedrock's ConverseStream (continuation_converse_e2e_test.go).

// cloudChoppy is choppy (kind anthropic or gemini) behind a cloud's endpoint.
type cloudChoppy struct {
	*choppy
	cloud string // vertex or bedrock
	path  string // the streaming path every request must ask
	creds aws.Credentials
	srv   *httptest.Server

	// exception, when set, is the exception frame (its :exception-type and payload) a
	// Bedrock stream's error event becomes, instead of the recorded
	// modelStreamErrorException.
	exception [2]string

	mu       sync.Mutex
	problems []string // what the cloud would have refused
}

func newCloudChoppy(t *testing.T, cloud, kind, path string, plan ...fault) *cloudChoppy {
	c := &cloudChoppy{choppy: newChoppy(t, kind, plan...), cloud: cloud, path: path,
		creds: aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "session-token-example"}}
	c.srv = httptest.NewServer(c)
	t.Cleanup(c.srv.Close)
	return c
}

func (c *cloudChoppy) problem(format string, args ...any) {
	c.mu.Lock()
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

func (c *cloudChoppy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if r.URL.EscapedPath() != c.path {
		c.problem("request to %s, want %s", r.URL.EscapedPath(), c.path)
	}
	switch c.cloud {
	case "vertex":
		if why := vertexAuth(r); why != "" {
			c.problem("auth: %s", why)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"code":401,"message":%q,"status":"UNAUTHENTICATED"}}`, why)
			return
		}
		if c.kind == "anthropic" && (gjson.GetBytes(body, "anthropic_version").Str != "vertex-2023-10-16" || gjson.GetBytes(body, "model").Exists()) {
			c.problem("not Vertex's Claude body: %s", body)
		}
		c.choppy.ServeHTTP(w, r)
	case "bedrock", "converse":
		f := &fakeBedrock{t: nil, creds: c.creds, region: "us-east-1"}
		if !f.verify(r, body) {
			c.problem("the SigV4 signature does not verify")
			w.Header().Set("x-amzn-ErrorType", "InvalidSignatureException")
			w.WriteHeader(403)
			io.WriteString(w, `{"message":"The request signature we calculated does not match the signature you provided."}`)
			return
		}
		if c.cloud == "converse" {
			if why := notConverseBody(body); why != "" {
				c.problem("not a Converse body (%s): %s", why, body)
			}
			c.choppy.ServeHTTP(&eventStreamWriter{w: w, frame: converseFrames(), exception: c.exception}, r)
			return
		}
		if gjson.GetBytes(body, "anthropic_version").Str != "bedrock-2023-05-31" || gjson.GetBytes(body, "model").Exists() || gjson.GetBytes(body, "stream").Exists() {
			c.problem("not Bedrock's Claude body: %s", body)
		}
		c.choppy.ServeHTTP(&eventStreamWriter{w: w, exception: c.exception}, r)
	}
}

// seenProblems returns what the cloud would have refused.
func (c *cloudChoppy) seenProblems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.problems...)
}

// eventStreamWriter turns choppy's Anthropic SSE into Bedrock's answer as it is
// written: each event's data in a chunk frame, an error event as the recorded
// modelStreamErrorException frame, and a 400 as Bedrock's ValidationException.
type eventStreamWriter struct {
	w      http.ResponseWriter
	status int
	buf    []byte
	// frame, when set, makes the frame of one Anthropic event (its type and data) instead
	// of the chunk frame: ConverseStream's (converseFrames); ok false sends none.
	frame func(typ, data string) (eventType, payload string, ok bool)
	// exception, when set, is the exception frame of an error event (cloudChoppy's).
	exception [2]string
}

func (e *eventStreamWriter) Header() http.Header { return e.w.Header() }

func (e *eventStreamWriter) WriteHeader(status int) {
	e.status = status
	if status == http.StatusOK {
		e.w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	} else {
		e.w.Header().Set("x-amzn-ErrorType", "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/")
	}
	e.w.WriteHeader(status)
}

func (e *eventStreamWriter) Write(p []byte) (int, error) {
	if e.status != http.StatusOK { // choppy's refusal, in Anthropic's shape: Bedrock's instead
		fmt.Fprintf(e.w, `{"message":%q}`, gjson.GetBytes(p, "error.message").Str)
		return len(p), nil
	}
	e.buf = append(e.buf, p...)
	for {
		i := bytes.Index(e.buf, []byte("\n\n"))
		if i < 0 {
			return len(p), nil
		}
		ev := e.buf[:i]
		e.buf = e.buf[i+2:]
		var typ, data string
		sc := bufio.NewScanner(bytes.NewReader(ev))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				typ = v
			} else if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data = v
			}
		}
		if typ == "error" && e.exception[0] != "" {
			var buf bytes.Buffer
			msg := eventstream.Message{Payload: []byte(e.exception[1])}
			msg.Headers.Set(":exception-type", eventstream.StringValue(e.exception[0]))
			msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
			eventstream.NewEncoder().Encode(&buf, msg)
			e.w.Write(buf.Bytes())
			continue
		}
		if typ == "error" {
			frame, _ := base64.StdEncoding.DecodeString(bedrockStreamError)
			e.w.Write(frame)
			continue
		}
		evType, payload := "chunk", `{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(data))+`","p":"abcdefgh"}`
		if e.frame != nil {
			var ok bool
			if evType, payload, ok = e.frame(typ, data); !ok {
				continue
			}
		}
		var buf bytes.Buffer
		msg := eventstream.Message{Payload: []byte(payload)}
		msg.Headers.Set(":event-type", eventstream.StringValue(evType))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		eventstream.NewEncoder().Encode(&buf, msg)
		e.w.Write(buf.Bytes())
	}
}

func (e *eventStreamWriter) Flush() { e.w.(http.Flusher).Flush() }

func (e *eventStreamWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return e.w.(http.Hijacker).Hijack()
}

// cloudContGateway starts a gateway whose model m is on a cloud backend "up" at c (one
// retry, stream_idle 100ms), serving upstream model with the model settings extra.
func cloudContGateway(t *testing.T, c *cloudChoppy, publisher, model, extra string) *gatewaytest.Gateway {
	const common = `retries: {max: 1, base_delay: 1ms, max_delay: 2ms}, timeouts: {stream_idle: 100ms}`
	var backend string
	opts := gatewaytest.Options{Runtime: proxy.TestRuntime}
	switch c.cloud {
	case "vertex":
		tokens := newGoogleTokenEndpoint(t)
		backend = fmt.Sprintf(`{type: vertex, base_url: %q, %s, vertex: {project: my-proj, location: us-east5, publisher: %s, credentials_file: %q}}`,
			c.srv.URL, common, publisher, tokens.serviceAccountFile(t))
	case "bedrock", "converse":
		opts.AWSCredentials = credentials.StaticCredentialsProvider{Value: c.creds} // not the environment's (#54)
		backend = fmt.Sprintf(`{type: bedrock, base_url: %q, %s, bedrock: {region: us-east-1}}`, c.srv.URL, common)
	}
	return gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: %s
models:
  m: {backend: up, upstream_model: %q%s}
`, backend, model, extra), opts)
}

const (
	vertexClaudePath = "/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
	vertexGeminiPath = "/v1/projects/my-proj/locations/us-east5/publishers/google/models/gemini-2.5-flash:streamGenerateContent"
	bedrockModel     = "us.anthropic.claude-sonnet-4-20250514-v1:0"
	bedrockPath      = "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/invoke-with-response-stream"
)

// TestContinuation_Clouds: a stream cut, or ended by the cloud's error, after part of the
// answer reached the client is continued by prefill (the default of Claude on Vertex and
// Bedrock, and of Gemini on Vertex), the prefill in the cloud's body; a prefill the model
// refuses with a 400 is restarted, the client never seeing that 400; both for the
// Messages passthrough (anthropic-sdk-go) and chat completions, translated (openai-go).
func TestContinuation_Clouds(t *testing.T) {
	type target struct{ cloud, kind, publisher, model, path string }
	vertexClaude := target{"vertex", "anthropic", "anthropic", "claude-sonnet-4-5@20250929", vertexClaudePath}
	vertexGemini := target{"vertex", "gemini", "google", "gemini-2.5-flash", vertexGeminiPath}
	bedrockClaude := target{"bedrock", "anthropic", "", bedrockModel, bedrockPath}
	for _, tt := range []struct {
		name     string
		at       target
		api      string
		plan     []fault
		prefill  string // the prefill of the second request
		requests int
		outcomes map[string]int
	}{
		{"vertex claude messages cut", vertexClaude, "messages", []fault{{3, "cut"}}, "The quick brown", 2, map[string]int{"continued": 1}},
		{"vertex claude messages error event", vertexClaude, "messages", []fault{{4, "error"}}, "The quick brown fox", 2, map[string]int{"continued": 1}},
		{"vertex claude messages prefill refused", vertexClaude, "messages", []fault{{3, "cut"}, {0, "refuse"}}, "The quick brown", 3, map[string]int{"refused": 1, "continued": 1}},
		{"vertex claude chat cut", vertexClaude, "chat", []fault{{3, "cut"}}, "The quick brown", 2, map[string]int{"continued": 1}},
		{"vertex claude chat prefill refused", vertexClaude, "chat", []fault{{3, "cut"}, {0, "refuse"}}, "The quick brown", 3, map[string]int{"refused": 1, "continued": 1}},
		{"vertex gemini chat cut", vertexGemini, "chat", []fault{{3, "cut"}}, "The quick brown", 2, map[string]int{"continued": 1}},
		{"bedrock claude messages cut", bedrockClaude, "messages", []fault{{3, "cut"}}, "The quick brown", 2, map[string]int{"continued": 1}},
		{"bedrock claude messages exception frame", bedrockClaude, "messages", []fault{{4, "error"}}, "The quick brown fox", 2, map[string]int{"continued": 1}},
		{"bedrock claude messages prefill refused", bedrockClaude, "messages", []fault{{3, "cut"}, {0, "refuse"}}, "The quick brown", 3, map[string]int{"refused": 1, "continued": 1}},
		{"bedrock claude chat cut", bedrockClaude, "chat", []fault{{3, "cut"}}, "The quick brown", 2, map[string]int{"continued": 1}},
		{"bedrock claude chat exception frame", bedrockClaude, "chat", []fault{{4, "error"}}, "The quick brown fox", 2, map[string]int{"continued": 1}},
		{"bedrock claude chat prefill refused", bedrockClaude, "chat", []fault{{3, "cut"}, {0, "refuse"}}, "The quick brown", 3, map[string]int{"refused": 1, "continued": 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := newCloudChoppy(t, tt.at.cloud, tt.at.kind, tt.at.path, tt.plan...)
			g := cloudContGateway(t, up, tt.at.publisher, tt.at.model, "")
			start := time.Now()
			a := askers[tt.api](t, g)
			if a.errorText != "" || a.text != contAnswer {
				t.Fatalf("answer %q, error %q; want the whole answer once", a.text, a.errorText)
			}
			t.Logf("whole answer after %v", time.Since(start).Round(time.Millisecond))
			if a.starts != 1 || a.finishes != 1 {
				t.Errorf("%d starts and %d finishes; want one each", a.starts, a.finishes)
			}
			if p := up.seenProblems(); len(p) > 0 {
				t.Errorf("the cloud would have refused: %q", p)
			}
			bodies := up.requests()
			if len(bodies) != tt.requests {
				t.Fatalf("%d upstream requests; want %d", len(bodies), tt.requests)
			}
			if got := up.prefill([]byte(bodies[1])); got != tt.prefill {
				t.Errorf("continuation's prefill %q; want %q", got, tt.prefill)
			}
			if tt.requests == 3 && up.prefill([]byte(bodies[2])) != "" {
				t.Errorf("the restart after the refusal has a prefill: %s", bodies[2])
			}
			for o, n := range tt.outcomes {
				waitFor(t, "outcome "+o, func() bool { return continuations(g, o) == n })
			}
			waitFor(t, "the usage charged", func() bool { p, o := charged(g); return a.prompt == p && a.output == o })
		})
	}
}
