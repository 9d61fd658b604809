package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// sdkServerEvents returns a Responses stream's events (each the data of one SSE event, in
// order) as the openai-go SDK's ResponseAccumulator takes them: decoded by the SDK's
// WebSocket client, whose Recv is the accumulator's documented source. The events go to
// it over a loopback WebSocket, one text message each, as the Responses API's WebSocket
// mode sends them, and Recv decodes each as the union variant its type names; a decode
// error fails the test naming the event.
//
// Why not json.Unmarshal into responses.ResponsesServerEventUnion: that type's public
// UnmarshalJSON decodes every event into each of the union's variants (the SDK keeps it so
// for compatibility; its WebSocket client uses an unexported per-type decode), which under
// -race cost 4 to 30 times the rest of a streamed test's work (#54). Both decodes give the
// accumulator the same events (TestSDKServerEvents_SameAsUnmarshal).
func sdkServerEvents(t testing.TB, raw [][]byte) []responses.ResponsesServerEventUnion {
	t.Helper()
	if len(raw) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for _, data := range raw {
			if err := c.Write(ctx, websocket.MessageText, data); err != nil {
				return
			}
		}
		c.Close(websocket.StatusNormalClosure, "")
	}))
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("relay"), option.WithMaxRetries(0))
	conn, err := client.Responses.Connect(ctx, responses.ResponseConnectionOptions{})
	if err != nil {
		t.Fatalf("server events: connecting the SDK's WebSocket client: %v", err)
	}
	defer conn.Close()
	out := make([]responses.ResponsesServerEventUnion, 0, len(raw))
	for i := range raw {
		ev, err := conn.Recv(ctx)
		if err != nil {
			t.Fatalf("event %d does not decode as a server event: %v: %.200s", i, err, raw[i])
		}
		out = append(out, ev)
	}
	return out
}

// TestSDKServerEvents_SameAsUnmarshal: the recorded Responses streams
// (testdata/fixtures/responses/stream), each event decoded by sdkServerEvents and by
// json.Unmarshal into the union, drive two accumulators to the same state after every
// event (the same error or none, the same snapshot) and to the same reconstructed
// response.
func TestSDKServerEvents_SameAsUnmarshal(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "fixtures", "responses", "stream", "*.sse"))
	if len(files) == 0 {
		t.Fatal("no recorded Responses streams")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var raw [][]byte
			for _, line := range bytes.Split(b, []byte("\n")) {
				if data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data: ")); ok {
					raw = append(raw, data)
				}
			}
			relayed := sdkServerEvents(t, raw)
			if len(relayed) != len(raw) || len(raw) < 5 {
				t.Fatalf("%d events relayed of %d", len(relayed), len(raw))
			}
			var byType, byUnion responses.ResponseAccumulator
			for i, data := range raw {
				var se responses.ResponsesServerEventUnion
				if err := json.Unmarshal(data, &se); err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if relayed[i].Type != se.Type || relayed[i].RawJSON() != se.RawJSON() {
					t.Fatalf("event %d: relayed %s %.80s, decoded %s %.80s", i, relayed[i].Type, relayed[i].RawJSON(), se.Type, se.RawJSON())
				}
				e1, e2 := byType.AddEvent(relayed[i]), byUnion.AddEvent(se)
				if fmt.Sprint(e1) != fmt.Sprint(e2) {
					t.Fatalf("event %d (%s): accumulator error %v relayed, %v decoded", i, se.Type, e1, e2)
				}
				if diff := cmp.Diff(byUnion.Snapshot(), byType.Snapshot()); diff != "" {
					t.Fatalf("event %d (%s): snapshots differ (-decoded +relayed):\n%s", i, se.Type, diff)
				}
			}
			r1, e1 := byType.ReconstructedResponse()
			r2, e2 := byUnion.ReconstructedResponse()
			if e1 != nil || e2 != nil {
				t.Fatalf("reconstructed: %v relayed, %v decoded", e1, e2)
			}
			if r1.RawJSON() != r2.RawJSON() || r1.ID == "" {
				t.Errorf("reconstructed responses differ:\n%.300s\n%.300s", r1.RawJSON(), r2.RawJSON())
			}
		})
	}
}
