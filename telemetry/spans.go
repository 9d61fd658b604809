package telemetry

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agate-gateway/agate/translate"
)

// Attribute names. The gen_ai.* ones are the OpenTelemetry GenAI semantic conventions'
// (development status); agate.* are Agate's own.
const (
	attrOperation       = attribute.Key("gen_ai.operation.name")
	attrProvider        = attribute.Key("gen_ai.provider.name")
	attrRequestModel    = attribute.Key("gen_ai.request.model")
	attrResponseModel   = attribute.Key("gen_ai.response.model")
	attrResponseID      = attribute.Key("gen_ai.response.id")
	attrFinishReasons   = attribute.Key("gen_ai.response.finish_reasons")
	attrInputTokens     = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens    = attribute.Key("gen_ai.usage.output_tokens")
	attrCacheReadTokens = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	attrCacheWriteTok   = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	attrTimeToFirst     = attribute.Key("gen_ai.response.time_to_first_chunk")
	attrTemperature     = attribute.Key("gen_ai.request.temperature")
	attrTopP            = attribute.Key("gen_ai.request.top_p")
	attrMaxTokens       = attribute.Key("gen_ai.request.max_tokens")
	attrPresence        = attribute.Key("gen_ai.request.presence_penalty")
	attrFrequency       = attribute.Key("gen_ai.request.frequency_penalty")
	attrSeed            = attribute.Key("gen_ai.request.seed")
	attrStop            = attribute.Key("gen_ai.request.stop_sequences")
	attrChoiceCount     = attribute.Key("gen_ai.request.choice.count")
	attrInputMessages   = attribute.Key("gen_ai.input.messages")
	attrSystemInstr     = attribute.Key("gen_ai.system_instructions")
	attrOutputMessages  = attribute.Key("gen_ai.output.messages")
	attrToolName        = attribute.Key("gen_ai.tool.name")
	attrToolCallID      = attribute.Key("gen_ai.tool.call.id")
	attrToolType        = attribute.Key("gen_ai.tool.type")
	attrToolArguments   = attribute.Key("gen_ai.tool.call.arguments")
	attrToolResult      = attribute.Key("gen_ai.tool.call.result")
	attrErrorType       = attribute.Key("error.type")
	attrHTTPMethod      = attribute.Key("http.request.method")
	attrHTTPRoute       = attribute.Key("http.route")
	attrHTTPStatus      = attribute.Key("http.response.status_code")
	attrServerAddress   = attribute.Key("server.address")
	attrServerPort      = attribute.Key("server.port")
	attrRequestID       = attribute.Key("agate.request_id")
	attrKey             = attribute.Key("agate.key")
	attrStream          = attribute.Key("agate.stream")
	attrBackend         = attribute.Key("agate.backend")
	attrRoute           = attribute.Key("agate.route")
	attrAttempt         = attribute.Key("agate.attempt")
	attrFallback        = attribute.Key("agate.fallback")
	attrFallbackReason  = attribute.Key("agate.fallback.reason")
	attrToolOutcome     = attribute.Key("agate.tool.outcome")
	attrToolCacheHit    = attribute.Key("agate.tool.cache_hit")
)

// Request is the server span of one client request. Not safe for concurrent use: it is
// handed from the handler to the stream writer, never shared. A nil *Request records
// nothing.
type Request struct {
	span  trace.Span
	ended bool
}

// StartRequest starts the server span of a request, continuing the trace that the
// client's traceparent and tracestate in headers name (a new trace without them). route
// is the served path ("/v1/chat/completions"); the span is named "{method} {route}".
func (t *Tracer) StartRequest(ctx context.Context, headers propagation.TextMapCarrier, method, route, requestID string) (context.Context, *Request) {
	if t == nil {
		return ctx, nil
	}
	ctx = t.prop.Extract(ctx, headers)
	ctx, span := t.tracer.Start(ctx, method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrHTTPMethod.String(method), attrHTTPRoute.String(route),
			attrOperation.String("chat"), attrRequestID.String(requestID)))
	return ctx, &Request{span: span}
}

// Context returns parent carrying the span, so that spans started under it are its
// children; parent itself when r is nil.
func (r *Request) Context(parent context.Context) context.Context {
	if r == nil {
		return parent
	}
	return trace.ContextWithSpan(parent, r.span)
}

// SetRequest records the parsed request: its model and parameters, the streaming flag
// and the name of the key (the configured name, never the credential).
func (r *Request) SetRequest(req *translate.Request, key string) {
	if r == nil {
		return
	}
	r.span.SetAttributes(attrRequestModel.String(req.Model), attrStream.Bool(req.Stream), attrKey.String(key))
	r.span.SetAttributes(requestParams(req, 0)...)
}

// SetOperation replaces gen_ai.operation.name, "chat" from StartRequest, for a request
// of another operation (op: "embeddings").
func (r *Request) SetOperation(op string) {
	if r == nil {
		return
	}
	r.span.SetAttributes(attrOperation.String(op))
}

// SetResult records the usage of every upstream turn and the time to the first content
// the client received (zero: none).
func (r *Request) SetResult(u translate.Usage, ttft time.Duration) {
	if r == nil {
		return
	}
	r.span.SetAttributes(usageAttrs(u)...)
	if ttft > 0 {
		r.span.SetAttributes(attrTimeToFirst.Float64(ttft.Seconds()))
	}
}

// End ends the span with the HTTP status of the response; a 5xx marks it failed. Only
// the first End counts.
func (r *Request) End(status int) {
	if r == nil || r.ended {
		return
	}
	r.ended = true
	if status > 0 {
		r.span.SetAttributes(attrHTTPStatus.Int(status))
	}
	if status >= 500 || status == 0 {
		code := strconv.Itoa(status)
		if status == 0 {
			code = "_OTHER"
		}
		r.span.SetAttributes(attrErrorType.String(code))
		r.span.SetStatus(codes.Error, "")
	}
	r.span.End()
}

// Observe records v into o with the request's trace id as an exemplar when the span is
// sampled; without a span it is o.Observe(v).
func (r *Request) Observe(o prometheus.Observer, v float64) {
	if r == nil {
		o.Observe(v)
		return
	}
	observe(r.span.SpanContext(), o, v)
}

// Attempt describes one upstream attempt for StartChat.
type Attempt struct {
	// Type is the backend type (anthropic, gemini, responses, openai, azure, vertex,
	// bedrock, mock); it names gen_ai.provider.name.
	Type string
	// Backend and Route are the configured backend and route names.
	Backend, Route string
	// Model is the upstream model asked for; empty means Route (a local backend).
	Model string
	// Number counts the attempts on this route, from 1; Fallback marks a fallback route.
	Number   int
	Fallback bool
	// FallbackReason, on a fallback, is why the gateway went to it (error, circuit_open:
	// the route before was skipped, context_length); recorded as agate.fallback.reason.
	FallbackReason string
	// BaseURL is the backend's base URL; only its host and port are recorded.
	BaseURL string
	// Operation is gen_ai.operation.name, which also starts the span's name; "" is "chat".
	Operation string
}

// Chat is the client span of one upstream attempt. Not safe for concurrent use; a nil
// *Chat records nothing.
type Chat struct {
	span    trace.Span
	start   time.Time
	capture bool
	first   bool
	id      string
	model   string
	finish  []string
	out     *outputCapture // nil unless content is captured
}

// StartChat starts the client span "chat {model}" of an upstream attempt under ctx.
func (t *Tracer) StartChat(ctx context.Context, a Attempt) (context.Context, *Chat) {
	if t == nil {
		return ctx, nil
	}
	if a.Model == "" {
		a.Model = a.Route
	}
	if a.Operation == "" {
		a.Operation = "chat"
	}
	attrs := []attribute.KeyValue{attrOperation.String(a.Operation), attrProvider.String(ProviderName(a.Type)),
		attrRequestModel.String(a.Model), attrBackend.String(a.Backend), attrRoute.String(a.Route),
		attrAttempt.Int(a.Number), attrFallback.Bool(a.Fallback)}
	if a.Fallback && a.FallbackReason != "" {
		attrs = append(attrs, attrFallbackReason.String(a.FallbackReason))
	}
	attrs = append(attrs, serverAddress(a.BaseURL)...)
	ctx, span := t.tracer.Start(ctx, a.Operation+" "+a.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	c := &Chat{span: span, start: time.Now(), capture: t.capture}
	if t.capture {
		c.out = &outputCapture{}
	}
	return ctx, c
}

// ProviderName is gen_ai.provider.name for a backend type: the convention's well-known
// value where there is one.
func ProviderName(typ string) string {
	switch typ {
	case "anthropic":
		return "anthropic"
	case "gemini":
		return "gcp.gemini"
	case "openai", "responses":
		return "openai"
	case "azure":
		return "azure.ai.openai"
	case "vertex":
		return "gcp.vertex_ai"
	case "bedrock":
		return "aws.bedrock"
	}
	return "agate." + typ
}

// serverAddress returns server.address and server.port of a base URL.
func serverAddress(base string) []attribute.KeyValue {
	rest, ok := strings.CutPrefix(base, "https://")
	port := 443
	if !ok {
		if rest, ok = strings.CutPrefix(base, "http://"); !ok {
			return nil
		}
		port = 80
	}
	host, _, _ := strings.Cut(rest, "/")
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:] // never userinfo
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		if p, err := strconv.Atoi(host[i+1:]); err == nil {
			port = p
		}
		host = host[:i]
	}
	return []attribute.KeyValue{attrServerAddress.String(host), attrServerPort.Int(port)}
}

// Request records the request of the attempt: its parameters, the effective max_tokens
// (defaultMaxTokens when the client set none) and, with content capture, its messages.
func (c *Chat) Request(req *translate.Request, stream bool, defaultMaxTokens int) {
	if c == nil {
		return
	}
	c.span.SetAttributes(attrStream.Bool(stream))
	c.span.SetAttributes(requestParams(req, defaultMaxTokens)...)
	if c.capture {
		c.span.SetAttributes(inputMessages(req)...)
	}
}

// Event records what an answer event tells about the response: its id and model, the
// finish reasons, the time to the first content, and (with capture) the content.
func (c *Chat) Event(ev *translate.Event) {
	if c == nil {
		return
	}
	switch ev.Kind {
	case translate.EventStart:
		if c.id == "" && ev.ID != "" {
			c.id = strings.Clone(ev.ID) // event strings alias decoder buffers
		}
		if c.model == "" && ev.Model != "" {
			c.model = strings.Clone(ev.Model)
		}
	case translate.EventFinish:
		c.finish = append(c.finish, ev.FinishReason) // a constant of translate
	case translate.EventTextDelta, translate.EventReasoningDelta, translate.EventRefusalDelta, translate.EventToolCallStart:
		c.FirstChunk()
	}
	if c.out != nil {
		c.out.add(ev)
	}
}

// FirstChunk records the time to the first content of the answer, once; later calls do
// nothing. Event calls it; a caller that does not decode events (the OpenAI passthrough)
// calls it at its first content chunk.
func (c *Chat) FirstChunk() {
	if c == nil || c.first {
		return
	}
	c.first = true
	c.span.SetAttributes(attrTimeToFirst.Float64(time.Since(c.start).Seconds()))
}

// End ends the span with the attempt's usage and its error (nil: success).
func (c *Chat) End(u translate.Usage, err error) {
	if c == nil {
		return
	}
	attrs := usageAttrs(u)
	if c.id != "" {
		attrs = append(attrs, attrResponseID.String(c.id))
	}
	if c.model != "" {
		attrs = append(attrs, attrResponseModel.String(c.model))
	}
	if len(c.finish) > 0 {
		attrs = append(attrs, attrFinishReasons.StringSlice(c.finish))
	}
	if c.out != nil {
		attrs = append(attrs, attrOutputMessages.String(c.out.json(c.finish)))
	}
	c.span.SetAttributes(attrs...)
	if err != nil {
		typ, desc := errorType(err)
		c.span.SetAttributes(attrErrorType.String(typ))
		var ue *translate.UpstreamError
		if errors.As(err, &ue) && ue.Status > 0 {
			c.span.SetAttributes(attrHTTPStatus.Int(ue.Status))
		}
		c.span.SetStatus(codes.Error, desc)
	}
	c.span.End()
}

// errorType returns error.type and a description of err that holds no upstream text (an
// upstream's message may quote the prompt): the status and the error's type and code.
func errorType(err error) (string, string) {
	var ue *translate.UpstreamError
	switch {
	case errors.As(err, &ue):
		desc := "upstream status " + strconv.Itoa(ue.Status)
		if ue.Type != "" {
			desc += " " + ue.Type
		}
		if ue.Code != "" {
			desc += " (" + ue.Code + ")"
		}
		return strconv.Itoa(ue.Status), desc
	case errors.Is(err, context.Canceled):
		return "cancelled", "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", "timeout"
	}
	return "_OTHER", ""
}

// Tool is the span of one server tool call. A nil *Tool records nothing.
type Tool struct {
	span    trace.Span
	capture bool
}

// StartTool starts the span "execute_tool {name}" of a server tool call under ctx; args
// are recorded only with content capture.
func (t *Tracer) StartTool(ctx context.Context, name, callID, args string) (context.Context, *Tool) {
	if t == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{attrOperation.String("execute_tool"), attrToolName.String(name),
		attrToolCallID.String(callID), attrToolType.String("function")}
	if t.capture {
		attrs = append(attrs, attrToolArguments.String(args))
	}
	ctx, span := t.tracer.Start(ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, &Tool{span: span, capture: t.capture}
}

// End ends the span with the call's result: isError marks it failed; content (what the
// model is given) is recorded only with content capture.
func (s *Tool) End(isError bool, content string) {
	if s == nil {
		return
	}
	if s.capture {
		s.span.SetAttributes(attrToolResult.String(content))
	}
	if isError {
		s.span.SetStatus(codes.Error, "")
	}
	s.span.End()
}

// ToolOutcome records, on the tool span in ctx, how the call ended (a tools.Outcome*
// value) and whether the cache served it; failed outcomes are its error.type. It does
// nothing when ctx holds no recording span.
func ToolOutcome(ctx context.Context, outcome string, failed bool) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attrToolOutcome.String(outcome), attrToolCacheHit.Bool(outcome == "cached"))
	if failed {
		span.SetAttributes(attrErrorType.String(outcome))
	}
}

// requestParams returns the gen_ai.request.* parameters the client set.
func requestParams(req *translate.Request, defaultMaxTokens int) []attribute.KeyValue {
	var a []attribute.KeyValue
	if mt := req.MaxTokens; mt > 0 {
		a = append(a, attrMaxTokens.Int(mt))
	} else if defaultMaxTokens > 0 {
		a = append(a, attrMaxTokens.Int(defaultMaxTokens))
	}
	if req.Temperature != nil {
		a = append(a, attrTemperature.Float64(*req.Temperature))
	}
	if req.TopP != nil {
		a = append(a, attrTopP.Float64(*req.TopP))
	}
	if req.PresencePenalty != nil {
		a = append(a, attrPresence.Float64(*req.PresencePenalty))
	}
	if req.FrequencyPenalty != nil {
		a = append(a, attrFrequency.Float64(*req.FrequencyPenalty))
	}
	if req.Seed != nil {
		a = append(a, attrSeed.Int64(*req.Seed))
	}
	if req.N > 1 {
		a = append(a, attrChoiceCount.Int(req.N))
	}
	if len(req.Stop) > 0 {
		a = append(a, attrStop.StringSlice(req.Stop))
	}
	return a
}

func usageAttrs(u translate.Usage) []attribute.KeyValue {
	a := []attribute.KeyValue{attrInputTokens.Int(u.PromptTokens), attrOutputTokens.Int(u.CompletionTokens)}
	if u.CachedTokens > 0 {
		a = append(a, attrCacheReadTokens.Int(u.CachedTokens))
	}
	if u.CacheCreationTokens > 0 {
		a = append(a, attrCacheWriteTok.Int(u.CacheCreationTokens))
	}
	return a
}

// TraceID returns the W3C trace id of the request's trace, 32 lower-case hex digits, or
// "" when r is nil (tracing off) or its span context is not valid.
func (r *Request) TraceID() string {
	if r == nil {
		return ""
	}
	sc := r.span.SpanContext()
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}
