package proxy

import (
	"strings"

	"github.com/tidwall/sjson"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// The chat completions passthrough's prefill (models.<name>.continuation: prefill on an
// openai backend). OpenAI's API does not continue a partial assistant message, but
// servers built on chat templates do when told to: vLLM (and SGLang, which takes the
// same request members) formats the chat "so that the final message in the chat is
// open-ended, without any EOS tokens" when the request sets continue_final_message
// true, which "cannot be used at the same time as add_generation_prompt" (vLLM's
// ChatCompletionRequest, its extra parameters); llama.cpp's server continues a final
// assistant message unless started with --no-prefill-assistant. A prefill attempt
// therefore sends the client's body with the text the client has (its trailing
// whitespace trimmed) appended as {"role":"assistant","content":...}, and
// "continue_final_message":true, "add_generation_prompt":false. An upstream that does not
// take those members refuses them with a 400 (OpenAI: "Unrecognized request argument
// supplied"), which is followed by a restart (continueTurn); the client never sees it.
//
// To send the text, the passthrough keeps what it forwards (resume.said) while the
// route or one of its fallbacks may prefill (mayPrefill); otherwise it keeps only the
// length and hash a restart compares (continuation_passthrough.go).

// mayPrefill reports whether a continuation of the call's route may prefill: the
// route's mode, one of its deployments', or one of its fallbacks'.
func (c *modelCall) mayPrefill() bool {
	prefills := func(r *route) bool {
		if r.deploy != nil {
			for _, dr := range r.deploy.routes {
				if dr.continuation == contPrefill {
					return true
				}
			}
			return false
		}
		return r.continuation == contPrefill
	}
	if prefills(c.route) {
		return true
	}
	for _, fb := range c.route.fallbacks {
		if r, ok := c.rt.routes[fb]; ok && prefills(r) {
			return true
		}
	}
	return false
}

// resumeMode prepares a continuation attempt of the chat passthrough in mode
// (forwardResumer): a prefill of the client's text when mode is prefill and the text was
// kept, else a restart that repeats it (followed by length and hash). It returns the
// mode used.
func (f *chatForward) resumeMode(mode contMode) contMode {
	k := &f.call.resume
	k.lenient, k.prefilled, k.pending, k.fwd.prefill = false, false, "", ""
	if mode != contPrefill || !k.fwd.keep || len(k.said) == 0 {
		return contRestart
	}
	p := strings.TrimRight(string(k.said), " \t\r\n")
	if p == "" {
		return contRestart
	}
	k.pending, k.lenient, k.prefilled, k.fwd.prefill = string(k.said[len(p):]), true, true, p
	k.fwd.seen, k.fwd.seenSum = k.fwd.n, k.fwd.sum // nothing to repeat: the upstream goes on from the prefill
	return contPrefill
}

// appendPrefilled appends the upstream body of a prefilled continuation attempt on route
// r to dst: the request as the passthrough forwards it, with the prefill as a final
// assistant message and the members that ask for it to be continued.
func (f *chatForward) appendPrefilled(dst []byte, r *route, opts *translate.Options) ([]byte, error) {
	body, err := r.backend.provider.AppendRequest(nil, f.req, opts)
	if err != nil {
		return dst, err
	}
	turn := jsonx.AppendString([]byte(`{"role":"assistant","content":`), f.call.resume.fwd.prefill)
	if body, err = sjson.SetRawBytes(body, "messages.-1", append(turn, '}')); err != nil {
		return dst, err
	}
	if body, err = continueFinalMessage(body); err != nil {
		return dst, err
	}
	return append(dst, body...), nil
}

// continueFinalMessage sets, in the chat completions body, the members that ask a
// chat-template server to continue the final assistant message instead of answering
// anew: "continue_final_message":true, "add_generation_prompt":false (vLLM's, SGLang's).
// Both the passthrough's prefill (appendPrefilled) and a translated prefill to an openai
// backend (prefillMembers) send them.
func continueFinalMessage(body []byte) ([]byte, error) {
	body, err := sjson.SetRawBytes(body, "continue_final_message", []byte("true"))
	if err != nil {
		return body, err
	}
	return sjson.SetRawBytes(body, "add_generation_prompt", []byte("false"))
}

// prefillMembers adds continueFinalMessage's members to ask, a translated request
// (a Messages or Responses client's, say) whose prefill is its final assistant message,
// when route r's backend is of type openai, whose encoder (translate/openai) writes the
// chat body ask.Body with the request's messages in it. Other backends' prefills need no
// member (Anthropic and Gemini continue a final assistant or model turn as it is). An
// openai upstream that refuses the members answers 400, which is followed by a restart
// (continueTurn), as in the passthrough.
func prefillMembers(ask *translate.Request, r *route) error {
	if r.backend.typ != "openai" {
		return nil
	}
	body, err := continueFinalMessage([]byte(ask.Body))
	if err != nil {
		return translate.Errorf("", "asking to continue the final assistant message: %v", err)
	}
	ask.Body = string(body)
	return nil
}
