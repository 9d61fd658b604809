package converse

import (
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// finishReason maps a Converse stopReason to an OpenAI finish reason (StopReason enum:
// end_turn, tool_use, max_tokens, stop_sequence, guardrail_intervened, content_filtered,
// model_context_window_exceeded).
func finishReason(r string) string {
	switch r {
	case "tool_use":
		return translate.FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return translate.FinishLength
	case "guardrail_intervened", "content_filtered":
		return translate.FinishContentFilter
	}
	return translate.FinishStop
}

// readUsage reads a TokenUsage object (inputTokens, outputTokens, cacheReadInputTokens,
// cacheWriteInputTokens) in OpenAI terms: the prompt counts the cache reads and writes,
// which Bedrock counts apart from inputTokens, as Anthropic does.
func readUsage(sc *jsonx.Scanner, v jsonx.Value) translate.Usage {
	var m [4]jsonx.Value
	sc.Members(v, []string{"inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"}, m[:])
	in, out, read, write := int(m[0].Int()), int(m[1].Int()), int(m[2].Int()), int(m[3].Int())
	return translate.Usage{PromptTokens: in + read + write, CompletionTokens: out, CachedTokens: read, CacheCreationTokens: write}
}

// DecodeResponse decodes a whole Converse answer: output.message.content's text,
// citationsContent (its text), reasoningContent and toolUse blocks, stopReason and usage.
// Blocks of other kinds are left out.
func (provider) DecodeResponse(body []byte, emit translate.Emit) error {
	sc := jsonx.NewScanner(jsonx.View(body))
	root, ok := sc.IndexRoot()
	if !ok || root.Kind != jsonx.Object {
		return malformed("a response that is not a JSON object", body)
	}
	var top [3]jsonx.Value
	sc.Members(root, []string{"output", "stopReason", "usage"}, top[:])
	content := sc.Path(top[0], "message", "content")
	if content.Kind != jsonx.Array {
		return malformed("a response without output.message.content", body)
	}
	var b blocks
	ev := translate.Event{Kind: translate.EventStart}
	if err := emit(&ev); err != nil {
		return err
	}
	var err error
	sc.Each(content, func(_ string, c jsonx.Value) bool {
		var m [4]jsonx.Value
		sc.Members(c, []string{"text", "reasoningContent", "toolUse", "citationsContent"}, m[:])
		switch {
		case m[0].Kind == jsonx.String:
			ev = translate.Event{Kind: translate.EventTextDelta, Text: m[0].Str}
			err = emit(&ev)
		case m[3].Kind == jsonx.Object:
			// Text with citations of the request's documents: the text is shown, the
			// citations are not (no client API here has a place for them).
			sc.Each(sc.Get(m[3], "content"), func(_ string, part jsonx.Value) bool {
				if t := sc.Get(part, "text"); t.Kind == jsonx.String {
					ev = translate.Event{Kind: translate.EventTextDelta, Text: t.Str}
					err = emit(&ev)
				}
				return err == nil
			})
		case m[1].Kind == jsonx.Object:
			var r [2]jsonx.Value
			sc.Members(m[1], []string{"reasoningText", "redactedContent"}, r[:])
			if r[1].Kind == jsonx.String {
				err = b.redacted(r[1].Str, m[1].Raw, emit)
				break
			}
			var t [2]jsonx.Value
			sc.Members(r[0], []string{"text", "signature"}, t[:])
			ev = translate.Event{Kind: translate.EventReasoningDelta, Text: t[0].Str}
			if err = emit(&ev); err == nil {
				err = b.thinking(t[0].Str, t[1].Str, m[1].Raw, emit)
			}
		case m[2].Kind == jsonx.Object:
			var t [3]jsonx.Value
			sc.Members(m[2], []string{"toolUseId", "name", "input"}, t[:])
			if t[0].Kind != jsonx.String || t[1].Kind != jsonx.String {
				err = malformed("a toolUse without toolUseId or name", body)
				break
			}
			if err = b.toolStart(t[0].Str, t[1].Str, emit); err != nil {
				break
			}
			args := t[2].Raw
			if args == "" || args == "null" {
				args = translate.NoArguments
			}
			ev = translate.Event{Kind: translate.EventToolCallArgsDelta, Index: b.calls - 1, Text: string(jsonx.AppendCompact(nil, args))}
			if err = emit(&ev); err == nil {
				ev = translate.Event{Kind: translate.EventToolCallEnd, Index: b.calls - 1}
				err = emit(&ev)
			}
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if sc.Failed() {
		return malformed("a response that is not valid JSON", body)
	}
	ev = translate.Event{Kind: translate.EventUsage, Usage: readUsage(&sc, top[2])}
	if err := emit(&ev); err != nil {
		return err
	}
	ev = translate.Event{Kind: translate.EventFinish, FinishReason: finishReason(top[1].Str)}
	return emit(&ev)
}

// blocks keeps what both decoders carry across content blocks: the number of tool calls
// so far, and the reasoningContent blocks since the last call, whose JSON array the next
// call's id carries (CarryID).
type blocks struct {
	calls int
	state []byte
	ev    translate.Event
	block translate.ThinkingBlock
}

// thinking emits a reasoning block (its text already emitted) and keeps raw, its
// reasoningContent value, for the next call's id.
func (b *blocks) thinking(text, signature, raw string, emit translate.Emit) error {
	b.keep(raw)
	b.block = translate.ThinkingBlock{Type: "thinking", Thinking: text, Signature: signature, Dialect: Dialect}
	b.ev = translate.Event{Kind: translate.EventReasoningBlock, Block: &b.block}
	return emit(&b.ev)
}

// redacted emits a redacted reasoning block and keeps raw.
func (b *blocks) redacted(data, raw string, emit translate.Emit) error {
	b.keep(raw)
	b.block = translate.ThinkingBlock{Type: "redacted_thinking", Data: data, Dialect: Dialect}
	b.ev = translate.Event{Kind: translate.EventReasoningBlock, Block: &b.block}
	return emit(&b.ev)
}

func (b *blocks) keep(raw string) {
	if len(b.state) == 0 {
		b.state = append(b.state, '[')
	} else {
		b.state[len(b.state)-1] = ','
	}
	b.state = jsonx.AppendCompact(b.state, raw)
	b.state = append(b.state, ']')
}

// toolStart emits the start of the next tool call, its id carrying the reasoning blocks
// kept since the last one.
func (b *blocks) toolStart(id, name string, emit translate.Emit) error {
	if len(b.state) > 0 {
		id = translate.CarryID(id, b.state)
		b.state = b.state[:0]
	}
	b.ev = translate.Event{Kind: translate.EventToolCallStart, Index: b.calls, CallID: id, Name: name}
	b.calls++
	return emit(&b.ev)
}
