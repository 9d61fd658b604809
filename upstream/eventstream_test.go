package upstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/openai"
)

// frame encodes one event-stream message with the AWS SDK's Encoder: headers as name,
// value pairs.
func frame(t testing.TB, payload string, headers ...string) []byte {
	t.Helper()
	msg := eventstream.Message{Payload: []byte(payload)}
	for i := 0; i+1 < len(headers); i += 2 {
		msg.Headers.Set(headers[i], eventstream.StringValue(headers[i+1]))
	}
	var b bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&b, msg); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func event(t testing.TB, typ, payload string) []byte {
	return frame(t, payload, ":event-type", typ, ":content-type", "application/json", ":message-type", "event")
}

func exception(t testing.TB, typ, payload string) []byte {
	return frame(t, payload, ":exception-type", typ, ":content-type", "application/json", ":message-type", "exception")
}

// modelStreamError is a real modelStreamErrorException frame recorded from Bedrock
// (vercel/ai @ 5f264fa2efefb27a58459413d943af08b21cf01a :
// packages/amazon-bedrock/src/__fixtures__/model-stream-error-exception.eventstream.base64.txt,
// Apache-2.0).
const modelStreamError = "AAAA3QAAAGfHkZB6DTptZXNzYWdlLXR5cGUHAAlleGNlcHRpb24POmV4Y2VwdGlvbi10eXBlBwAZbW9kZWxTdHJlYW1FcnJvckV4Y2VwdGlvbg06Y29udGVudC10eXBlBwAQYXBwbGljYXRpb24vanNvbnsibWVzc2FnZSI6Ik1vZGVsIFN0cmVhbSBFcnJvciIsIm9yaWdpbmFsU3RhdHVzQ29kZSI6NTAwLCJvcmlnaW5hbE1lc3NhZ2UiOiJUaGUgbW9kZWwgc3RyZWFtIGZhaWxlZC4ifVczQxM="

// bedrockErrors is a provider whose DecodeError reads Bedrock's {"message"} errors.
type bedrockErrors struct{ translate.Provider }

func (bedrockErrors) DecodeError(status int, body []byte) *translate.UpstreamError {
	msg := string(body)
	if i := strings.Index(msg, `"message":"`); i >= 0 {
		msg = msg[i+11:]
		msg = msg[:strings.IndexByte(msg, '"')]
	}
	return &translate.UpstreamError{Status: status, Type: translate.ErrorType(status), Message: msg}
}

// TestPumpEventStream: event frames reach onEvent with their :event-type, however the
// bytes are split; an exception frame is the provider's error with the exception's status,
// retryable when that status is; a frame over the bound, a corrupt one or a stream cut
// mid-frame is a 502 naming the backend; a failed read a retryable transport error.
func TestPumpEventStream(t *testing.T) {
	two := append(event(t, "messageStart", `{"role":"assistant"}`), event(t, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hi"}}`)...)
	recorded, err := base64.StdEncoding.DecodeString(modelStreamError)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := bytes.Clone(two)
	corrupt[len(corrupt)-6] ^= 0xff // the payload of the second frame: its CRC fails
	huge := make([]byte, 12)
	copy(huge, []byte{0x7f, 0, 0, 0}) // a prelude announcing a 2 GiB frame
	tests := []struct {
		name       string
		body       io.Reader
		wantEvents []string
		wantEnd    bool
		wantErr    string // in the error's message; "" for none
		wantStatus int
		retryable  bool
	}{
		{name: "clean end", body: bytes.NewReader(two), wantEvents: []string{"messageStart", "contentBlockDelta"}, wantEnd: true},
		{name: "one byte a read", body: iotest.OneByteReader(bytes.NewReader(two)), wantEvents: []string{"messageStart", "contentBlockDelta"}, wantEnd: true},
		{name: "empty", body: bytes.NewReader(nil), wantEnd: true},
		{name: "recorded modelStreamErrorException", body: bytes.NewReader(append(bytes.Clone(two), recorded...)),
			wantEvents: []string{"messageStart", "contentBlockDelta"}, wantErr: "Model Stream Error", wantStatus: 424},
		{name: "throttlingException", body: bytes.NewReader(exception(t, "throttlingException", `{"message":"Too many requests, please wait before trying again."}`)),
			wantErr: "Too many requests", wantStatus: 429, retryable: true},
		{name: "internalServerException", body: bytes.NewReader(exception(t, "internalServerException", `{"message":"boom"}`)), wantErr: "boom", wantStatus: 500, retryable: true},
		{name: "error message", body: bytes.NewReader(frame(t, "", ":message-type", "error", ":error-code", "InternalFailure", ":error-message", "bad")),
			wantErr: `the upstream of backend up sent an event-stream error "InternalFailure": bad`, wantStatus: 502},
		{name: "cut mid-frame", body: bytes.NewReader(two[:len(two)-3]), wantEvents: []string{"messageStart"}, wantErr: "the upstream of backend up ended the stream mid-frame", wantStatus: 502},
		{name: "cut mid-prelude", body: bytes.NewReader(append(bytes.Clone(two), 0, 0)), wantEvents: []string{"messageStart", "contentBlockDelta"}, wantErr: "mid-frame", wantStatus: 502},
		{name: "corrupt", body: bytes.NewReader(corrupt), wantEvents: []string{"messageStart"}, wantErr: "does not decode", wantStatus: 502},
		{name: "over the bound", body: bytes.NewReader(huge), wantErr: "over the gateway's bound of 1048576", wantStatus: 502},
		{name: "read error", body: io.MultiReader(bytes.NewReader(two[:20]), iotest.ErrReader(errors.New("reset"))),
			wantErr: "could not reach the upstream of backend up", wantStatus: 502, retryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var events []string
			reads, ended := 0, false
			err := PumpEventStream(context.Background(), tt.body, "up", bedrockErrors{}, func(typ, _ []byte) error {
				events = append(events, string(typ))
				return nil
			}, func() error { reads++; return nil }, func() error { ended = true; return nil })
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("PumpEventStream = %v, want %q", err, tt.wantErr)
			}
			if strings.Join(events, ",") != strings.Join(tt.wantEvents, ",") || ended != tt.wantEnd || reads == 0 {
				t.Errorf("events %q, ended %v after %d reads; want %q, ended %v", events, ended, reads, tt.wantEvents, tt.wantEnd)
			}
			if tt.wantErr != "" {
				ue := AsError(err)
				if ue == nil || ue.Status != tt.wantStatus || ue.Retryable != tt.retryable {
					t.Errorf("error %#v; want status %d, retryable %v", ue, tt.wantStatus, tt.retryable)
				}
			}
		})
	}
}

// TestPumpEventStreamCancel: once the context ends the pump stops with its error.
func TestPumpEventStreamCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	go func() { _, _ = w.Write(event(t, "messageStart", `{}`)) }()
	err := PumpEventStream(ctx, r, "up", bedrockErrors{}, func(_, _ []byte) error {
		cancel()
		_ = w.CloseWithError(errors.New("closed")) // as Exchange's hook closes the body
		return nil
	}, nil, func() error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("PumpEventStream = %v, want context.Canceled", err)
	}
}

// TestPumpEventStreamIdle: a Bedrock upstream that sends a frame and then nothing fails
// after the backend's stream_idle, as a TimedOut 504, through Client.Pump.
func TestPumpEventStreamIdle(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		_, _ = w.Write(event(t, "messageStart", `{"role":"assistant"}`))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	c, err := New(Backend{Name: "up", BaseURL: srv.URL, MaxConns: 2, Framing: FramingEventStream,
		Timeouts: Timeouts{Connect: long, Header: long, StreamIdle: short, PoolWait: long}}, bedrockErrors{openai.New()})
	if err != nil {
		t.Fatal(err)
	}
	var mem Exchange
	x, err := c.Send(context.Background(), "/model/m/converse-stream", nil, []byte(`{}`), true, &mem)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	body, err := DecodedBody(x, "up")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var events []string
	err = c.Pump(context.Background(), body, nil, func(typ, _ []byte) error { events = append(events, string(typ)); return nil }, nil, func() error { return nil })
	if !TimedOut(err) || AsError(err).Status != http.StatusGatewayTimeout || fmt.Sprint(events) != "[messageStart]" {
		t.Fatalf("Pump = %v after %v, events %v; want a TimedOut 504 after messageStart", err, time.Since(start), events)
	}
	if waited := time.Since(start); waited > short+tolerance {
		t.Errorf("waited %v, stream_idle %v", waited, short)
	}
}

// FuzzPumpEventStream: whatever bytes arrive, the pump ends with an event-stream verdict,
// never a panic, and hands on only frames that decoded whole. Seeded with real frames.
func FuzzPumpEventStream(f *testing.F) {
	recorded, _ := base64.StdEncoding.DecodeString(modelStreamError)
	f.Add(recorded)
	f.Add(append(event(f, "messageStart", `{"role":"assistant"}`), event(f, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hi"}}`)...))
	f.Add(event(f, "chunk", `{"bytes":"eyJ0eXBlIjoibWVzc2FnZV9zdG9wIn0="}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		n := 0
		_ = PumpEventStream(context.Background(), bytes.NewReader(b), "up", bedrockErrors{}, func(_, data []byte) error {
			if len(data) > MaxEventStreamFrame {
				t.Fatalf("a payload of %d bytes went through", len(data))
			}
			n++
			return nil
		}, nil, func() error { return nil })
	})
}

// BenchmarkPumpEventStream is the event-stream framing's cost per frame (the SDK's
// Decoder and the pump around it), over ConverseStream-sized frames.
func BenchmarkPumpEventStream(b *testing.B) {
	var stream []byte
	const n = 64
	for range n {
		stream = append(stream, event(b, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" are **3** r's in the word"},"p":"abcdefghijkl"}`)...)
	}
	onEvent := func(_, _ []byte) error { return nil }
	end := func() error { return nil }
	r := bytes.NewReader(stream)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r.Reset(stream)
		if err := PumpEventStream(context.Background(), r, "up", bedrockErrors{}, onEvent, nil, end); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/frame")
}
