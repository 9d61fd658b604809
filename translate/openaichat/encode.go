package openaichat

import (
	"math"
	"strconv"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// ChunkEncoder turns events into OpenAI chat.completion.chunk SSE frames. It guarantees the
// invariants strict clients check: the same id, created and model on every chunk; a first
// delta with role "assistant"; tool calls numbered 0, 1, 2... per choice with id, type and
// name only on their first delta; a call without arguments ending as "{}" (translate.NoArguments); exactly one
// finish_reason per choice; the usage chunk (choices: []) when asked; then [DONE].
//
// A ChunkEncoder serves one response and is not safe for concurrent use.
type ChunkEncoder struct {
	Errors // its errors: translate.ClientStream's AppendErrorEvent and AppendErrorBody

	// The first choice's state is held inline (most responses have one choice), so an
	// encoder is two allocations: itself and its prefixes (see NewChunkEncoder).
	done    bool
	prefix  []byte        // `data: {"id":...,"choices":[`
	choices []choiceState // first, until a second choice
	first   [1]choiceState

	usagePrefix  []byte // `data: {"id":...,"choices":[],"usage":`
	id           string // the prefixes' id and created (SetModel)
	created      int64
	includeUsage bool
	usage        translate.Usage
}

type choiceState struct {
	started bool
	finish  string
	calls   []callState
}

type callState struct {
	key     int // the decoder's Event.Index
	hasArgs bool
	ended   bool
}

// NewChunkEncoder returns an encoder for the response id, the client-facing model name and
// the creation time in unix seconds. With includeUsage the stream ends with a usage chunk.
func NewChunkEncoder(id, model string, created int64, includeUsage bool) *ChunkEncoder {
	e := &ChunkEncoder{includeUsage: includeUsage, id: id, created: created}
	e.choices = e.first[:]
	e.setHead(model)
	return e
}

// SetModel replaces the client-facing model name (the model that answered, when it is not
// the one the encoder was made for). It must be called before the first Encode: every
// chunk of a stream names the same model.
func (e *ChunkEncoder) SetModel(model string) { e.setHead(model) }

// setHead makes the prefixes of the chunks for model.
func (e *ChunkEncoder) setHead(model string) {
	// Both prefixes share one allocation: the head, then its copy in usagePrefix.
	const choices, usage = `,"choices":[`, `,"choices":[],"usage":`
	b := make([]byte, 0, 2*(96+len(e.id)+len(model))+len(choices)+len(usage))
	b = append(b, `data: {"id":`...)
	b = jsonx.AppendString(b, e.id)
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, e.created, 10)
	b = append(b, `,"model":`...)
	b = jsonx.AppendString(b, model)
	head := len(b)
	b = append(b, choices...)
	e.prefix = b[:len(b):len(b)]
	b = append(b, b[:head]...)
	e.usagePrefix = append(b, usage...)[len(e.prefix):]
}

func (e *ChunkEncoder) choice(i int) *choiceState {
	for len(e.choices) <= i {
		e.choices = append(e.choices, choiceState{})
	}
	return &e.choices[i]
}

// Encode appends the frames for ev to dst. EventError is not encoded here (see
// AppendErrorEvent); EventFinish and EventUsage are held until Finish.
func (e *ChunkEncoder) Encode(dst []byte, ev *translate.Event) []byte {
	if e.done {
		return dst
	}
	c := e.choice(ev.Choice)
	switch ev.Kind {
	case translate.EventStart:
		if !c.started {
			dst = e.open(dst, ev.Choice, c)
			dst = append(dst, `"content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
		}
	case translate.EventTextDelta, translate.EventReasoningDelta, translate.EventRefusalDelta:
		withLogprobs := ev.Kind == translate.EventTextDelta && len(ev.Logprobs) > 0
		if ev.Text == "" && !withLogprobs {
			return dst
		}
		dst = e.open(dst, ev.Choice, c)
		switch ev.Kind {
		case translate.EventTextDelta:
			dst = append(dst, `"content":`...)
		case translate.EventReasoningDelta:
			dst = append(dst, `"reasoning_content":`...)
		default:
			dst = append(dst, `"refusal":`...)
		}
		dst = jsonx.AppendString(dst, ev.Text)
		if withLogprobs {
			dst = append(dst, `},"logprobs":`...)
			dst = appendLogprobs(dst, ev.Logprobs)
			dst = append(dst, `,"finish_reason":null}]}`+"\n\n"...)
			return dst
		}
		dst = append(dst, `},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	case translate.EventLogprobs:
		if len(ev.Logprobs) == 0 {
			return dst
		}
		dst = e.open(dst, ev.Choice, c)
		if dst[len(dst)-1] == ',' { // role only
			dst = dst[:len(dst)-1]
		}
		dst = append(dst, `},"logprobs":`...)
		dst = appendLogprobs(dst, ev.Logprobs)
		dst = append(dst, `,"finish_reason":null}]}`+"\n\n"...)
	case translate.EventToolCallStart:
		n := len(c.calls)
		c.calls = append(c.calls, callState{key: ev.Index})
		dst = e.open(dst, ev.Choice, c)
		dst = append(dst, `"tool_calls":[{"index":`...)
		dst = jsonx.AppendInt(dst, n)
		dst = append(dst, `,"id":`...)
		dst = jsonx.AppendString(dst, ev.CallID)
		dst = append(dst, `,"type":"function","function":{"name":`...)
		dst = jsonx.AppendString(dst, ev.Name)
		dst = append(dst, `,"arguments":""}}]},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	case translate.EventToolCallArgsDelta:
		n := c.find(ev.Index)
		if n < 0 || ev.Text == "" {
			return dst
		}
		if !translate.NoArgumentText(ev.Text) {
			c.calls[n].hasArgs = true
		}
		dst = e.args(dst, ev.Choice, c, n, ev.Text)
	case translate.EventToolCallEnd:
		n := c.find(ev.Index)
		if n < 0 || c.calls[n].ended {
			return dst
		}
		c.calls[n].ended = true
		if !c.calls[n].hasArgs {
			c.calls[n].hasArgs = true
			dst = e.args(dst, ev.Choice, c, n, translate.NoArguments)
		}
	case translate.EventUsage:
		e.usage = ev.Usage
	case translate.EventFinish:
		if c.finish == "" {
			c.finish = ownedReason(ev.FinishReason) // written later: ev's strings are views of the upstream's event
		}
	}
	return dst
}

func (c *choiceState) find(key int) int {
	for i := range c.calls {
		if c.calls[i].key == key {
			return i
		}
	}
	return -1
}

// appendIndex appends the index n in decimal, as jsonx.AppendInt does: a single digit
// (nearly every chunk's choice and tool call) without strconv's call.
func appendIndex(dst []byte, n int) []byte {
	if 0 <= n && n < 10 {
		return append(dst, byte('0'+n))
	}
	return jsonx.AppendInt(dst, n)
}

// open appends the chunk head up to the inside of "delta":{ including the role on the
// choice's first chunk.
func (e *ChunkEncoder) open(dst []byte, choice int, c *choiceState) []byte {
	dst = append(dst, e.prefix...)
	dst = append(dst, `{"index":`...)
	dst = appendIndex(dst, choice)
	dst = append(dst, `,"delta":{`...)
	if !c.started {
		c.started = true
		dst = append(dst, `"role":"assistant",`...)
	}
	return dst
}

func (e *ChunkEncoder) args(dst []byte, choice int, c *choiceState, n int, frag string) []byte {
	dst = e.open(dst, choice, c)
	dst = append(dst, `"tool_calls":[{"index":`...)
	dst = appendIndex(dst, n)
	dst = append(dst, `,"function":{"arguments":`...)
	dst = jsonx.AppendString(dst, frag)
	return append(dst, `}}]},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
}

// Finish appends the terminal frames: unfinished tool calls closed, one finish chunk per
// choice, the usage chunk if asked, and data: [DONE]. It is idempotent.
func (e *ChunkEncoder) Finish(dst []byte) []byte {
	if e.done {
		return dst
	}
	for i := range e.choices {
		c := &e.choices[i]
		for n := range c.calls {
			if !c.calls[n].hasArgs {
				c.calls[n].hasArgs = true
				dst = e.args(dst, i, c, n, translate.NoArguments)
			}
		}
		dst = e.open(dst, i, c)
		if dst[len(dst)-1] == ',' { // role only
			dst = dst[:len(dst)-1]
		}
		dst = append(dst, `},"logprobs":null,"finish_reason":`...)
		dst = jsonx.AppendString(dst, finishReason(c.finish, len(c.calls) > 0))
		dst = append(dst, "}]}\n\n"...)
	}
	if e.includeUsage {
		dst = append(dst, e.usagePrefix...)
		dst = AppendUsage(dst, e.usage)
		dst = append(dst, "}\n\n"...)
	}
	e.done = true
	return append(dst, "data: [DONE]\n\n"...)
}

// Usage returns the last usage the encoder saw.
func (e *ChunkEncoder) Usage() translate.Usage { return e.usage }

// finishReason normalises a choice's finish reason: a choice that called tools and
// stopped normally finished with tool_calls; a missing reason is stop.
func finishReason(reason string, calledTools bool) string {
	switch {
	case reason == "" && calledTools, reason == translate.FinishStop && calledTools:
		return translate.FinishToolCalls
	case reason == "":
		return translate.FinishStop
	}
	return reason
}

// appendLogprobs appends a choice's logprobs object, {"content":[...],"refusal":null}, with
// every ChatCompletionTokenLogprob field OpenAI marks required; null when lp is empty.
func appendLogprobs(dst []byte, lp []translate.TokenLogprob) []byte {
	if len(lp) == 0 {
		return append(dst, "null"...)
	}
	dst = append(dst, `{"content":[`...)
	for i := range lp {
		t := &lp[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendTokenLogprob(dst, t.Token, t.Logprob, t.Bytes)
		dst = append(dst, `,"top_logprobs":[`...)
		for j := range t.Top {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendTokenLogprob(dst, t.Top[j].Token, t.Top[j].Logprob, t.Top[j].Bytes)
			dst = append(dst, '}')
		}
		dst = append(dst, "]}"...)
	}
	return append(dst, `],"refusal":null}`...)
}

// appendTokenLogprob appends {"token":...,"logprob":...,"bytes":[...] without the closing
// brace. raw are the token's bytes, nil for those of token.
func appendTokenLogprob(dst []byte, token string, logprob float64, raw []byte) []byte {
	dst = append(dst, `{"token":`...)
	dst = jsonx.AppendString(dst, token)
	dst = append(dst, `,"logprob":`...)
	if math.IsNaN(logprob) || math.IsInf(logprob, 0) {
		logprob = -9999 // OpenAI's value for a very unlikely token; JSON has no NaN or Inf
	}
	dst = jsonx.AppendFloat(dst, logprob)
	dst = append(dst, `,"bytes":[`...)
	if raw == nil {
		for i := 0; i < len(token); i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonx.AppendInt(dst, int(token[i]))
		}
	} else {
		for i, b := range raw {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonx.AppendInt(dst, int(b))
		}
	}
	return append(dst, ']')
}

// AppendUsage appends an OpenAI usage object.
func AppendUsage(dst []byte, u translate.Usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = jsonx.AppendInt(dst, u.PromptTokens)
	dst = append(dst, `,"completion_tokens":`...)
	dst = jsonx.AppendInt(dst, u.CompletionTokens)
	dst = append(dst, `,"total_tokens":`...)
	dst = jsonx.AppendInt(dst, u.PromptTokens+u.CompletionTokens)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = jsonx.AppendInt(dst, u.CachedTokens)
	dst = append(dst, `},"completion_tokens_details":{"reasoning_tokens":`...)
	dst = jsonx.AppendInt(dst, u.ReasoningTokens)
	return append(dst, `}}`...)
}

// AppendError appends an OpenAI error object {"error":{...}} (translate.AppendOpenAIError).
func AppendError(dst []byte, message, typ, param, code string) []byte {
	return translate.AppendOpenAIError(dst, message, typ, param, code)
}

// AppendErrorEvent appends an in-band SSE error frame, the last frame of a failed stream.
func AppendErrorEvent(dst []byte, message, typ, param, code string) []byte {
	dst = append(dst, "data: "...)
	dst = AppendError(dst, message, typ, param, code)
	return append(dst, "\n\n"...)
}
