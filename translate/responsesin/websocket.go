package responsesin

import (
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// The client messages of the Responses API's WebSocket mode (GET /v1/responses upgraded):
// each text message is one JSON object whose "type" names it. OpenAI documents one,
// response.create, whose other members are the top-level fields of a POST /v1/responses
// body ("stream" is implicit and "background" is not served over a WebSocket; "generate":
// false asks for a warm-up that prepares state without generating). Codex also sends
// response.processed ({"response_id"}) after it has handled a response, which needs no
// answer. Sources: developers.openai.com/api/docs/guides/websocket-mode and
// /api/reference/resources/responses/websocket-events; openai/codex
// codex-rs/codex-api/src/common.rs (ResponsesWsRequest).

// Client event types.
const (
	EventCreate    = "response.create"
	EventProcessed = "response.processed"
)

// ClientEvent is one client message read by ReadClientEvent.
type ClientEvent struct {
	// Type is the message's type: EventCreate, EventProcessed, or another a server may
	// refuse.
	Type string
	// Body is, for EventCreate, the message as the body of a streamed POST /v1/responses:
	// its members but type, stream and generate, with "stream": true first. Nil for other
	// types.
	Body []byte
	// NoGenerate is set by "generate": false (a warm-up).
	NoGenerate bool
}

// ReadClientEvent reads one client message of the WebSocket mode, appending the body of a
// response.create to dst (Body aliases the result). A message that is not one JSON object
// with a string "type", or a response.create with "background": true or a "generate" or
// "stream" that is not a boolean, is a *translate.ParamError naming the member.
func ReadClientEvent(dst, msg []byte) (ClientEvent, error) {
	var ev ClientEvent
	s := jsonx.View(msg)
	if !jsonx.ValidUTF8(s) {
		return ev, translate.Errorf("", "the message is not valid UTF-8")
	}
	sc := jsonx.NewScanner(s)
	root, ok := sc.Root()
	if !ok || !sc.AtEnd() || root.Kind != jsonx.Object {
		return ev, translate.Errorf("", "the message is not one JSON object")
	}
	t := sc.Get(root, "type")
	if t.Kind != jsonx.String {
		return ev, translate.Errorf("type", "the message has no string member type: send a response.create event")
	}
	ev.Type = t.Str
	if ev.Type != EventCreate {
		return ev, nil
	}
	start := len(dst)
	dst = append(dst, `{"stream":true`...)
	var err error
	sc.Each(root, func(key string, v jsonx.Value) bool {
		switch key {
		case "type":
			return true
		case "stream":
			if !v.IsBool() {
				err = translate.Errorf("stream", "must be a boolean (a WebSocket always streams)")
				return false
			}
			return true
		case "generate":
			if !v.IsBool() {
				err = translate.Errorf("generate", "must be a boolean")
				return false
			}
			ev.NoGenerate = v.Kind == jsonx.False
			return true
		case "background":
			if v.Kind == jsonx.True {
				err = translate.Errorf("background", "background responses are not served over a WebSocket: use POST /v1/responses")
				return false
			}
		}
		dst = append(dst, ',')
		dst = jsonx.AppendString(dst, key)
		dst = append(dst, ':')
		dst = append(dst, v.Raw...)
		return true
	})
	if err != nil {
		return ClientEvent{Type: ev.Type}, err
	}
	if sc.Failed() {
		return ClientEvent{Type: ev.Type}, translate.Errorf("", "the message is not valid JSON")
	}
	dst = append(dst, '}')
	ev.Body = dst[start:]
	return ev, nil
}
