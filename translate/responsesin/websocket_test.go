package responsesin

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agate-gateway/agate/translate"
)

func readRecordedMessages(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("testdata/websocket/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded messages: %v", err)
	}
	msgs := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		msgs[filepath.Base(f)] = b
	}
	return msgs
}

// TestReadClientEvent: what each client message becomes: a response.create the body of a
// streamed POST /v1/responses ("stream": true first, type, stream and generate dropped,
// every other member as it was), other types only named, and what is refused with the
// member to blame.
func TestReadClientEvent(t *testing.T) {
	tests := []struct {
		name       string
		msg        string
		typ        string
		body       string
		noGenerate bool
		param      string // of the error; "-" for none
	}{
		{"create", `{"type":"response.create","model":"m","input":"hi"}`, EventCreate, `{"stream":true,"model":"m","input":"hi"}`, false, "-"},
		{"create with stream and spaces", `{ "model" : "m", "stream": true, "type": "response.create", "tools": [ ] }`, EventCreate, `{"stream":true,"model":"m","tools":[ ]}`, false, "-"},
		{"warm-up", `{"type":"response.create","model":"m","generate":false,"input":[]}`, EventCreate, `{"stream":true,"model":"m","input":[]}`, true, "-"},
		{"generate true", `{"type":"response.create","generate":true}`, EventCreate, `{"stream":true}`, false, "-"},
		{"background false is kept", `{"type":"response.create","background":false}`, EventCreate, `{"stream":true,"background":false}`, false, "-"},
		{"escaped key", `{"type":"response.create","mo\u0064el":"m"}`, EventCreate, `{"stream":true,"model":"m"}`, false, "-"},
		{"processed", `{"type":"response.processed","response_id":"resp_1"}`, EventProcessed, "", false, "-"},
		{"other type", `{"type":"response.cancel"}`, "response.cancel", "", false, "-"},
		{"background", `{"type":"response.create","background":true}`, EventCreate, "", false, "background"},
		{"generate not a boolean", `{"type":"response.create","generate":"no"}`, EventCreate, "", false, "generate"},
		{"stream not a boolean", `{"type":"response.create","stream":1}`, EventCreate, "", false, "stream"},
		{"no type", `{"model":"m"}`, "", "", false, "type"},
		{"type not a string", `{"type":1}`, "", "", false, "type"},
		{"array", `[{"type":"response.create"}]`, "", "", false, ""},
		{"two values", `{"type":"response.create"} {}`, "", "", false, ""},
		{"truncated", `{"type":"response.create","input":[`, "", "", false, ""},
		{"not UTF-8", "{\"type\":\"response.create\",\"input\":\"\xff\"}", "", "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := ReadClientEvent([]byte("prefix"), []byte(tt.msg))
			if tt.param != "-" {
				var pe *translate.ParamError
				if !errors.As(err, &pe) || pe.Param != tt.param || ev.Body != nil {
					t.Fatalf("got %+v, %v; want an error naming %q", ev, err, tt.param)
				}
				return
			}
			if err != nil || ev.Type != tt.typ || string(ev.Body) != tt.body || ev.NoGenerate != tt.noGenerate {
				t.Errorf("got %+v (body %s), %v; want type %q, body %s, noGenerate %v", ev, ev.Body, err, tt.typ, tt.body, tt.noGenerate)
			}
		})
	}
}

// TestReadClientEvent_Codex: Codex's recorded warm-up and turn become bodies that
// ParseWithin reads as streamed requests, equal member for member but the three dropped.
func TestReadClientEvent_Codex(t *testing.T) {
	for name, msg := range readRecordedMessages(t) {
		t.Run(name, func(t *testing.T) {
			ev, err := ReadClientEvent(nil, msg)
			if err != nil || ev.Type != EventCreate {
				t.Fatalf("%+v, %v", ev, err)
			}
			var in, out map[string]json.RawMessage
			if err := json.Unmarshal(msg, &in); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(ev.Body, &out); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			if ev.NoGenerate != (string(in["generate"]) == "false") {
				t.Errorf("NoGenerate %v for generate %s", ev.NoGenerate, in["generate"])
			}
			delete(in, "type")
			delete(in, "generate")
			in["stream"] = json.RawMessage("true")
			for k, v := range in {
				if !bytes.Equal(out[k], v) {
					t.Errorf("member %s changed", k)
				}
			}
			if len(in) != len(out) {
				t.Errorf("%d members, want %d", len(out), len(in))
			}
			req, err := ParseWithin(ev.Body, 1<<20)
			if err != nil || !req.Core.Stream {
				t.Fatalf("ParseWithin: %v", err)
			}
		})
	}
}

// FuzzReadClientEvent: any message is an event or an error, never a panic; a body is
// valid JSON (what ParseWithin makes of it is FuzzParse's).
func FuzzReadClientEvent(f *testing.F) {
	for _, msg := range readRecordedMessages(f) {
		f.Add(msg)
	}
	f.Add([]byte(`{"type":"response.create","model":"m","generate":false,"background":false,"stream":true}`))
	f.Add([]byte(`{"type":"response.processed","response_id":"resp_1"}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		ev, err := ReadClientEvent(nil, msg)
		if err != nil || ev.Body == nil {
			return
		}
		if !json.Valid(ev.Body) {
			t.Fatalf("body %q of %q is not JSON", ev.Body, msg)
		}
	})
}

// BenchmarkReadClientEvent reads Codex's recorded turn message.
func BenchmarkReadClientEvent(b *testing.B) {
	msg := readRecordedMessages(b)["codex-0.169-turn.json"]
	dst := make([]byte, 0, len(msg)+64)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadClientEvent(dst[:0], msg); err != nil {
			b.Fatal(err)
		}
	}
}
