package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/openaichat"
)

// This file continues a chat completions passthrough stream (an OpenAI-compatible
// backend answering a chat client) that failed after part of its answer reached the
// client, as continuation.go continues a translated one, over the same loop
// (continueTurn): the same route while its retries last, then its fallbacks, within the
// request's deadline. The passthrough forwards the upstream's chunks, not events, so its
// one mode is restart, whatever the route's (a prefill would mean editing the client's
// body): the request is sent again as the client sent it, and the new answer's text is
// relayed from where the client's ends.
//
// The passthrough keeps no copy of the answer: what reached the client is followed as the
// length and an FNV-1a hash of its text (followed), taken from each chunk as the chunk
// rewriter reads it (openai.Chunk.Text). A continuation hashes the new answer's text up to
// that length, and compares: the same, and what follows is relayed (the chunk that
// straddles the end is spliced: a chunk with the rest of its text); different, or a tool
// call, a refusal or a finish before it, and the stream ends with the in-band 502
// continuation_diverged. Every chunk keeps the client's id, created and model (the chunk
// contract): the head of the stream's first chunk. The new answer's role chunk and its
// reasoning are swallowed, and its usage chunk carries the usage of the turn's earlier
// attempts added to its own (a usage inside a chunk with choices, which OpenAI does not
// send, is passed as it came).
//
// The Messages passthrough is continued over the same loop, by its own rules
// (continuation_messages.go): its forwarder is a forwardResumer.

// followed is what a forwarded chat stream showed the client of its text.
type followed struct {
	// n and sum are the length and hash of the text the client has.
	n   int
	sum uint64
	// seen and seenSum are, during a continuation, the length and hash of the new
	// answer's text that repeats it so far (up to n).
	seen    int
	seenSum uint64
	// attempt runs one attempt of the forwarded stream on a route: set while the turn is
	// a passthrough's (continueTurn then restarts it, resumeForward).
	attempt func(context.Context, *route) error
	// resumer prepares a continuation attempt of a passthrough that may prefill (the
	// Messages passthrough's, and chat's: continuation_chat.go).
	resumer forwardResumer
	// keep is set when the chat passthrough keeps the text it forwards in resume.said:
	// its route or a fallback may prefill (continuation_chat.go); prefill is the text
	// the running continuation attempt sends as a final assistant message ("" none).
	keep    bool
	prefill string
}

// forwardResumer is a forwarder whose continuation attempts need preparing (the Messages
// passthrough's, continuation_messages.go).
type forwardResumer interface {
	// resumeMode prepares the next continuation attempt in mode, the route's: what it
	// sends, and what of the client's text the new answer is to repeat (resume.pending);
	// it returns the mode it prepared.
	resumeMode(mode contMode) contMode
}

// FNV-1a, 64 bits.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnvAdd returns h extended by the bytes of s.
func fnvAdd(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// startForward begins following a forwarded chat stream whose attempts attempt runs:
// after startResume, whose on says whether it may be continued.
func (c *modelCall) startForward(attempt func(context.Context, *route) error, f forwarder) {
	c.resume.fwd = followed{sum: fnvOffset, attempt: attempt}
	if r, ok := f.(forwardResumer); ok {
		c.resume.fwd.resumer = r
	}
	if _, chat := f.(*chatForward); chat && c.resume.on {
		c.resume.fwd.keep = c.mayPrefill()
	}
}

// follow decides about chunk, read from the running attempt of a forwarded chat stream
// and appended to dst from mark on, while the stream may be continued (resume.on): it
// returns dst with what the client is to get of it, how it passes (0: nothing), or the
// error that ends the attempt (errDiverged).
func (f *chatForward) follow(dst []byte, mark int, chunk *openai.Chunk) ([]byte, passed, error) {
	const shown = passSent | passWrite | passContent | passFirstChunk
	k := &f.call.resume
	fw := &k.fwd
	text := chunk.Text
	if strings.IndexByte(text, '\\') >= 0 {
		// Most chunks' text fits on the stack, zeroed only for a chunk that needs it.
		var room [256]byte
		text = string(jsonx.AppendDecoded(room[:0], text)) // copied: room ends with the block
	}
	if !k.active {
		fw.n, fw.sum = fw.n+len(text), fnvAdd(fw.sum, text)
		if fw.keep {
			k.said = append(k.said, text...)
		}
		k.note(chunk)
		return dst, shown, nil
	}
	if chunk.HasUsage && chunk.Choices == 0 { // the new answer's usage: with the earlier attempts'
		if !f.req.IncludeUsage {
			return dst, 0, nil
		}
		u := chunk.Usage
		u.Add(k.prior)
		var obj [160]byte
		return f.chunks.rw.AppendUsage(dst[:mark], openaichat.AppendUsage(obj[:0], u)), passSent | passWrite, nil
	}
	if k.prefilled && k.pending != "" && text != "" { // the whitespace a prefill trimmed, repeated or not
		if rest, _ := k.match(text); len(rest) != len(text) {
			text = rest
			if text == "" && !chunk.Finished {
				return dst[:mark], 0, nil
			}
			dst = f.chunks.rw.AppendText(dst[:mark], text, chunk.Finish)
		}
	}
	if need := fw.n - fw.seen; need > 0 {
		if chunk.Opaque {
			return dst[:mark], 0, errDiverged // a tool call or refusal where the text was
		}
		head := text[:min(need, len(text))]
		fw.seen, fw.seenSum = fw.seen+len(head), fnvAdd(fw.seenSum, head)
		if fw.seen == fw.n && fw.seenSum != fw.sum || chunk.Finished && fw.seen < fw.n {
			return dst[:mark], 0, errDiverged // other text, or an end before the client's
		}
		text = text[len(head):]
		if text == "" && !chunk.Finished {
			return dst[:mark], 0, nil // repeated: the client has it
		}
		// The rest of the chunk is new to the client.
		dst = f.chunks.rw.AppendText(dst[:mark], text, chunk.Finish)
	} else if text == "" && !chunk.Opaque && !chunk.Finished {
		return dst[:mark], 0, nil // the new answer's role chunk, or its reasoning: the client's ended
	}
	fw.n, fw.sum = fw.n+len(text), fnvAdd(fw.sum, text)
	fw.seen, fw.seenSum = fw.n, fw.sum // the client has all the new answer has said
	if fw.keep {
		k.said = append(k.said, text...)
	}
	k.note(chunk)
	return dst, shown, nil
}

// note records what of chunk, about to reach the client, stops a continuation (resume.pass
// for the passthrough).
func (k *resume) note(chunk *openai.Chunk) {
	switch {
	case chunk.Finished:
		k.blocked = "finished"
	case chunk.Opaque:
		k.blocked = "tool_call"
	case chunk.Reasoning && k.fwd.n == 0:
		k.reasoning = true
	}
}

// resumeForward runs one continuation attempt of a forwarded chat stream on route r (a
// restart, resumeOn's passthrough twin).
func (c *modelCall) resumeForward(ctx context.Context, req *translate.Request, r *route, mode contMode, attempt int, failure error) error {
	k := &c.resume
	k.active = true
	k.prior = usageSince(c.Usage, k.base)
	k.fwd.seen, k.fwd.seenSum = 0, fnvOffset
	if k.fwd.resumer != nil {
		mode = k.fwd.resumer.resumeMode(mode)
	} else {
		mode = contRestart
	}
	c.log().Warn("continuing the stream", "model", r.name, "backend", r.backend.name, "mode", mode.String(),
		"sent_bytes", max(k.fwd.n, len(k.said)), "error", logError(failure, c.rt.cfg.Log.UpstreamErrorMessages))
	c.sent = false
	c.at = r
	c.meter.prompt = req
	err := c.tracedAttempt(ctx, r, attempt, k.fwd.attempt)
	if err == nil && (k.fwd.seen < k.fwd.n || k.pending != "" && !k.lenient) {
		err = errDiverged // the new answer ended shorter than what the client has
	}
	return err
}

// noteContinued makes the model that finished a continued stream the one that answered
// (answeredBy: the access line's answered_model and fallback, the ledger's served model
// and its price; gateway_fallback_answers_total counts it when it is another fallback than
// the one that began), and returns the configured name of the model whose stream broke
// (clipped), or "" when no continuation finished the answer. The client's chunks, headers
// and events keep naming the model the stream began with: they were sent before.
func (c *requestRun) noteContinued() string {
	from := c.call.continuedFrom
	if from == nil || c.call.at == nil {
		return ""
	}
	was := c.answeredBy
	c.answeredBy = c.call.at
	if r := c.answeredBy; r.of() != c.route && (was == nil || was.of() != r.of()) {
		c.s.metrics.FallbackAnswers.WithLabelValues(c.route.label(), r.name).Inc()
	}
	return clip(from.name, maxLoggedString)
}

// heldEvent is the failure of a passthrough attempt that ended with an upstream error
// event the client has not been sent: held back while the stream may be continued, and
// forwarded as it came (releaseHeld) when it stays the stream's failure.
type heldEvent struct {
	err       error
	typ, data []byte // copies
}

func (h *heldEvent) Error() string { return h.err.Error() }
func (h *heldEvent) Unwrap() error { return h.err }

// holdEvent returns err, the failure an upstream error event (typ, data: views) reported,
// holding the event back.
func holdEvent(err error, typ, data []byte) error {
	return &heldEvent{err: err, typ: bytes.Clone(typ), data: bytes.Clone(data)}
}

// eventHolder is a forwarder that holds upstream error events back for a continuation.
type eventHolder interface {
	// appendHeld appends the client's bytes for a held event to dst, as its event method
	// would have forwarded it.
	appendHeld(dst []byte, h *heldEvent) []byte
}

// releaseHeld writes the upstream error event err holds, when it does and f held it, to
// o: the stream ends with it as it would have without a continuation, and the returned
// error says it was forwarded (errReported). Any other err is returned as it is.
func releaseHeld(err error, f forwarder, o *sseOut) error {
	var h *heldEvent
	holder, ok := f.(eventHolder)
	if !ok || !errors.As(err, &h) {
		return err
	}
	o.buf = holder.appendHeld(o.take(), h)
	if werr := o.write(); werr != nil {
		return werr
	}
	return fmt.Errorf("%w: %w", errReported, h.err)
}
