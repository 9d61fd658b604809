package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/responsestore"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/responsesin"
)

// GET /v1/responses with a WebSocket upgrade serves the Responses API's WebSocket mode
// (developers.openai.com/api/docs/guides/websocket-mode; Codex's client is
// codex-rs/codex-api/src/endpoint/responses_websocket.rs). The key is checked at the
// upgrade, from the same headers as a POST (Authorization: Bearer). Then each text
// message response.create is one turn: its members are the body of a streamed
// POST /v1/responses, served by the very request path of that route (handleResponses:
// keys, routing, limits, budgets, metrics with api="responses", spans, the access line,
// the ledger), and the events its SSE stream would carry are sent, each as one text
// message. A turn that fails before its first event is one error message
// {"type":"error","status":N,"error":{...}} (with "headers" holding Retry-After), the
// shape Codex reads as the HTTP error it stands for.
//
// The connection keeps its own responses (wsTurn.local): previous_response_id names a
// response of an earlier turn on it whatever its store, as OpenAI's connection-local
// cache does, and otherwise one of the server's store. One turn runs at a time (a
// response.create sent during one is refused with an error message); the connection is
// bounded by responses_websocket: idle_timeout, max_message_bytes (over it: close 1009)
// and max_turns (the next turn is refused with websocket_connection_limit_reached, on
// which Codex opens a new connection). A client that leaves ends its turn's upstream
// call. When the mode is off the upgrade is answered 426, on which Codex falls back to
// HTTP at once (codex-rs/core/src/client.rs, WebsocketStreamOutcome::FallbackToHttp).

// wsTurnValue is the user value key under which a turn's RequestCtx carries its *wsTurn.
type wsTurnValue struct{}

// wsTurn is what a turn on a WebSocket connection adds to the POST /v1/responses run
// serving it.
type wsTurn struct {
	// ctx is the turn's: cancelled when the client leaves or the connection closes.
	ctx context.Context
	// local holds the connection's responses, each turn's whatever its store.
	local responsestore.Store
}

// wsTurnOf returns the WebSocket turn ctx serves, nil for a plain HTTP request.
func wsTurnOf(ctx *fasthttp.RequestCtx) *wsTurn {
	t, _ := ctx.UserValue(wsTurnValue{}).(*wsTurn)
	return t
}

// wsLocalEntries is how many responses a connection keeps for previous_response_id: the
// latest turns' (OpenAI keeps the latest one).
const wsLocalEntries = 4

func (s *Server) handleResponsesWebsocket(ctx *fasthttp.RequestCtx, rid string) {
	rt := s.runtime()
	wc := rt.cfg.ResponsesWebsocket.Effective(rt.cfg.Server.MaxBodyBytes)
	m := s.metrics.Websocket
	if !wc.On() {
		m.Upgrades.WithLabelValues("disabled").Inc()
		writeError(ctx, apiError{Status: http.StatusUpgradeRequired, Type: "invalid_request_error", Code: "upgrade_required",
			Message: "this gateway does not serve the Responses API over a WebSocket (responses_websocket.enabled: false): use POST /v1/responses"})
		return
	}
	if msg := checkUpgrade(&ctx.Request.Header); msg != "" {
		m.Upgrades.WithLabelValues("refused").Inc()
		ctx.Response.Header.Set("Sec-Websocket-Version", "13") // canonical: response names are written as given
		writeError(ctx, apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "bad_websocket_handshake", Message: msg})
		return
	}
	if _, err := requestKey(ctx, rt); err != nil {
		m.Upgrades.WithLabelValues("refused").Inc()
		s.fail(ctx, rid, err, "", "", "", "true")
		return
	}
	hdr := &fasthttp.RequestHeader{}
	ctx.Request.Header.CopyTo(hdr)
	r := upgradeRequest(&ctx.Request.Header, ctx.Host())
	remote := ctx.RemoteAddr()
	m.Upgrades.WithLabelValues("accepted").Inc()
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(nc net.Conn) { s.serveWebsocket(nc, r, hdr, remote, wc) })
}

// checkUpgrade returns what is wrong with a WebSocket handshake's headers (RFC 6455
// section 4.2.1), "" when nothing is.
func checkUpgrade(h *fasthttp.RequestHeader) string {
	switch {
	case string(h.Peek("Sec-Websocket-Version")) != "13":
		return "a WebSocket handshake needs Sec-WebSocket-Version: 13"
	case len(h.Peek("Sec-Websocket-Key")) == 0:
		return "a WebSocket handshake needs a Sec-WebSocket-Key"
	case !h.ConnectionUpgrade():
		return "a WebSocket handshake needs Connection: Upgrade"
	}
	return ""
}

// isWebsocketUpgrade reports whether the request asks to upgrade to a WebSocket.
func isWebsocketUpgrade(ctx *fasthttp.RequestCtx) bool {
	return ctx.IsGet() && bytes.EqualFold(ctx.Request.Header.Peek("Upgrade"), []byte("websocket"))
}

// upgradeRequest is the handshake as net/http's Request, which websocket.Accept reads: the
// headers it checks, nothing of the body.
func upgradeRequest(h *fasthttp.RequestHeader, host []byte) *http.Request {
	r := &http.Request{Method: http.MethodGet, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Host: string(host)}
	for _, k := range []string{"Connection", "Upgrade", "Sec-Websocket-Version", "Sec-Websocket-Key", "Sec-Websocket-Extensions", "Sec-Websocket-Protocol", "Origin"} { // canonical, as foldHeaderNames leaves them
		if v := h.Peek(k); len(v) > 0 {
			r.Header.Set(k, string(v))
		}
	}
	return r
}

// hijacked is the http.ResponseWriter and http.Hijacker websocket.Accept needs, over the
// connection fasthttp hijacked (which hands over what it had read ahead): WriteHeader
// writes the status line and headers at once, Hijack returns the connection.
type hijacked struct {
	conn    net.Conn
	h       http.Header
	wrote   bool
	errored bool
}

func (w *hijacked) Header() http.Header { return w.h }

func (w *hijacked) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	if code != http.StatusSwitchingProtocols {
		w.errored = true
		w.h.Set("Connection", "close")
	}
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(code) + " " + http.StatusText(code) + "\r\n")
	_ = w.h.Write(&b)
	b.WriteString("\r\n")
	_, _ = w.conn.Write(b.Bytes())
}

func (w *hijacked) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.conn.Write(p)
}

func (w *hijacked) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.conn, bufio.NewReadWriter(bufio.NewReader(w.conn), bufio.NewWriter(w.conn)), nil
}

// wsConn is one WebSocket connection of the Responses API's WebSocket mode.
type wsConn struct {
	s      *Server
	conn   *websocket.Conn
	nc     net.Conn                // under conn: its write deadline bounds each message (send)
	hdr    *fasthttp.RequestHeader // the upgrade's headers: each turn's
	remote net.Addr
	cfg    config.ResponsesWebsocket
	local  responsestore.Store
	// ending is set by a turn before it sends its last message (its terminal event or
	// error), so that the client's next response.create, which may arrive before the
	// turn's goroutine has returned, waits for it instead of being refused as busy.
	ending atomic.Bool
}

// wsMessage is one message read from the client, or the error that ended the reading.
type wsMessage struct {
	typ  websocket.MessageType
	data []byte
	err  error
}

// serveWebsocket completes the handshake on the hijacked connection nc and serves the
// connection until it closes.
func (s *Server) serveWebsocket(nc net.Conn, r *http.Request, hdr *fasthttp.RequestHeader, remote net.Addr, wc config.ResponsesWebsocket) {
	_ = nc.SetDeadline(time.Time{}) // fasthttp's read and write timeouts were for the request
	conn, err := websocket.Accept(&hijacked{conn: nc, h: http.Header{}}, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		s.logger.Warn("websocket handshake failed", "error", err)
		return
	}
	conn.SetReadLimit(int64(wc.MaxMessageBytes))
	w := &wsConn{s: s, conn: conn, nc: nc, hdr: hdr, remote: remote, cfg: wc,
		local: responsestore.NewMemory(responsestore.MemoryOptions{MaxEntries: wsLocalEntries, MaxBytes: s.maxStored * wsLocalEntries})}
	if !s.websockets.add(w) { // the server is shutting down
		_ = conn.Close(websocket.StatusGoingAway, "the gateway is shutting down")
		return
	}
	defer s.websockets.remove(w)
	w.serve()
}

// serve reads the client's messages and runs their turns, one at a time, until the
// connection ends: the client closes or leaves, a bound is reached, or the server stops.
func (w *wsConn) serve() {
	m := w.s.metrics.Websocket
	m.Open.Inc()
	defer m.Open.Dec()
	ctx, cancel := context.WithCancel(w.s.baseCtx)
	defer cancel()
	msgs := make(chan wsMessage)
	go w.read(ctx, msgs)
	idle := time.NewTimer(w.cfg.IdleTimeout)
	defer idle.Stop()
	var (
		done       chan struct{} // open while a turn runs
		turnCancel context.CancelFunc
		turns      int
		reason     string // why the connection ends
	)
	stopping := w.s.websockets.stopping()
	for reason == "" {
		select {
		case msg := <-msgs:
			if msg.err != nil {
				reason = readEndReason(msg.err)
				break
			}
			if done != nil && w.ending.Load() { // its last message is sent: it is over
				<-done
				done = nil
				turnCancel()
			}
			reason = w.onMessage(msg, done != nil, &turns, func(ev responsesin.ClientEvent) {
				var tctx context.Context
				tctx, turnCancel = context.WithCancel(ctx)
				w.ending.Store(false)
				done = make(chan struct{})
				go func(done chan struct{}) {
					defer close(done)
					w.turn(tctx, ev)
				}(done)
			})
		case <-done:
			done = nil
			turnCancel()
			idle.Reset(w.cfg.IdleTimeout)
		case <-idle.C:
			if done == nil {
				reason = "idle"
			}
		case <-stopping:
			stopping = nil // a running turn ends first
			if done == nil {
				reason = "shutdown"
			}
		}
		if stopping == nil && done == nil && reason == "" {
			reason = "shutdown"
		}
	}
	if done != nil { // the client left or the connection must end: the turn ends too
		turnCancel()
		<-done
	}
	m.Closed.WithLabelValues(reason).Inc()
	switch reason {
	case "idle":
		_ = w.conn.Close(websocket.StatusNormalClosure, "idle timeout (responses_websocket.idle_timeout)")
	case "max_turns":
		_ = w.conn.Close(websocket.StatusNormalClosure, "turn limit reached (responses_websocket.max_turns): open a new connection")
	case "shutdown":
		_ = w.conn.Close(websocket.StatusGoingAway, "the gateway is shutting down")
	case "invalid":
		_ = w.conn.Close(websocket.StatusUnsupportedData, "only text messages holding client events are served")
	default: // the client closed or left, or the read limit closed it (1009)
		_ = w.conn.CloseNow()
	}
}

// read sends each message the client sends to msgs until reading fails, then that error.
// Reading also answers the client's pings and its close.
func (w *wsConn) read(ctx context.Context, msgs chan<- wsMessage) {
	for {
		typ, data, err := w.conn.Read(context.Background()) // a cancelled Read closes the connection
		select {
		case msgs <- wsMessage{typ: typ, data: data, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// readEndReason is the Closed metric's reason for the error that ended reading.
func readEndReason(err error) string {
	if websocket.CloseStatus(err) == websocket.StatusMessageTooBig || errors.Is(err, websocket.ErrMessageTooBig) {
		return "too_big"
	}
	return "client"
}

// onMessage handles one client message; start runs a turn. It returns why the connection
// must end, "" to go on.
func (w *wsConn) onMessage(msg wsMessage, busy bool, turns *int, start func(responsesin.ClientEvent)) string {
	m := w.s.metrics.Websocket
	if msg.typ != websocket.MessageText {
		m.Turns.WithLabelValues("refused").Inc()
		return "invalid"
	}
	ev, err := responsesin.ReadClientEvent(nil, msg.data)
	switch {
	case err != nil:
		m.Turns.WithLabelValues("refused").Inc()
		w.sendError(classify(err, ""), nil)
		return ""
	case ev.Type == responsesin.EventProcessed:
		m.Turns.WithLabelValues("ignored").Inc()
		return ""
	case ev.Type != responsesin.EventCreate:
		m.Turns.WithLabelValues("refused").Inc()
		w.sendError(classify(translate.Errorf("type", "the event type %q is not served: send response.create", clip(ev.Type, maxLoggedString)), ""), nil)
		return ""
	case busy:
		m.Turns.WithLabelValues("busy").Inc()
		w.sendError(apiError{Status: http.StatusConflict, Type: "invalid_request_error", Code: "response_in_progress",
			Message: "a response is in progress on this connection: send the next response.create once it has ended"}, nil)
		return ""
	case *turns >= w.cfg.MaxTurns:
		m.Turns.WithLabelValues("refused").Inc()
		w.sendError(apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "websocket_connection_limit_reached",
			Message: "this connection has served its " + strconv.Itoa(w.cfg.MaxTurns) + " turns (responses_websocket.max_turns): create a new websocket connection to continue"}, nil)
		return "max_turns"
	}
	*turns++
	if ev.NoGenerate {
		m.Turns.WithLabelValues("warmup").Inc()
	} else {
		m.Turns.WithLabelValues("turn").Inc()
	}
	start(ev)
	return ""
}

// turn serves one response.create as a POST /v1/responses on the request path and sends
// its answer: the stream's events, or the error it was refused with.
func (w *wsConn) turn(ctx context.Context, ev responsesin.ClientEvent) {
	defer func() { // handle recovers its own; this is the warm-up's and the sending's
		if p := recover(); p != nil {
			w.s.logger.Error("websocket turn panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			w.ending.Store(true)
			w.sendError(classify(errors.New("panic"), ""), nil)
		}
	}()
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	w.hdr.CopyTo(&req.Header)
	req.Header.Del("X-Request-Id") // each turn is a request of its own
	req.Header.Del("Upgrade")
	req.Header.Del("Connection")
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetRequestURI("/v1/responses")
	req.Header.SetContentType("application/json")
	req.SetBodyRaw(ev.Body)
	rc := &fasthttp.RequestCtx{}
	rc.Init(req, w.remote, nil)
	rc.SetUserValue(wsTurnValue{}, &wsTurn{ctx: ctx, local: w.local})
	if ev.NoGenerate {
		w.s.warmup(rc)
	} else {
		w.s.handle(rc)
	}
	out := &wsEvents{w: w, ending: &w.ending}
	if rc.Response.StatusCode() == http.StatusOK {
		_ = rc.Response.BodyWriteTo(out) // a failed write is the client gone: the stream ended
		return
	}
	var body bytes.Buffer
	_ = rc.Response.BodyWriteTo(&body)
	w.ending.Store(true)
	w.sendErrorBody(rc.Response.StatusCode(), body.Bytes(), rc.Response.Header.Peek("Retry-After"))
}

// sendError sends a as an error message.
func (w *wsConn) sendError(a apiError, retryAfter []byte) {
	if a.RetryAfter > 0 && retryAfter == nil {
		retryAfter = strconv.AppendInt(nil, int64(a.RetryAfter), 10)
	}
	w.sendErrorBody(a.Status, translate.AppendOpenAIError(nil, a.Message, a.Type, a.Param, a.Code), retryAfter)
}

// sendErrorBody sends the JSON error body of an HTTP answer with status as the error
// message Codex reads as that answer: {"type":"error","status":N,"error":{...}} and
// "headers" holding Retry-After when there is one.
func (w *wsConn) sendErrorBody(status int, body, retryAfter []byte) {
	_ = w.send(appendErrorMessage(nil, status, body, retryAfter))
}

// wsWriteTimeout bounds the sending of one message (or responses_websocket.idle_timeout
// when shorter): a client that takes none for that long is gone, and its turn ends.
const wsWriteTimeout = 30 * time.Second

// send sends msg as a text message within wsWriteTimeout. The write's context is
// Background: coder/websocket closes the connection when a Write's context ends, and a
// cancellable one costs it two allocations a message; the deadline of the connection
// under it bounds the write instead.
func (w *wsConn) send(msg []byte) error {
	_ = w.nc.SetWriteDeadline(time.Now().Add(min(wsWriteTimeout, w.cfg.IdleTimeout)))
	return w.conn.Write(context.Background(), websocket.MessageText, msg)
}

// appendErrorMessage appends the error message of an answer with status and the JSON error
// body {"error":{...}} the gateway wrote for it (its members are kept as they are).
func appendErrorMessage(dst []byte, status int, body, retryAfter []byte) []byte {
	dst = append(dst, `{"type":"error","status":`...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	if len(retryAfter) > 0 {
		dst = append(dst, `,"headers":{"retry-after":`...)
		dst = jsonx.AppendString(dst, string(retryAfter))
		dst = append(dst, '}')
	}
	if rest, ok := bytes.CutPrefix(bytes.TrimSpace(body), []byte(`{"error":`)); ok {
		dst = append(dst, `,"error":`...)
		return append(dst, rest...)
	}
	dst = append(dst, `,"error":{"message":`...)
	dst = jsonx.AppendString(dst, http.StatusText(status))
	return append(dst, `,"type":"api_error","param":null,"code":null}}`...)
}

// wsEvents is the writer a turn's SSE stream is written to: it sends the data of each
// event as one text message and skips comments (keep-alives). An error event, which ends
// a stream that failed after it started, gets the status 502 Codex needs to end the turn
// (a status-less error it would wait past).
type wsEvents struct {
	w      *wsConn
	buf    []byte
	ending *atomic.Bool // set before a terminal event is sent
}

func (o *wsEvents) Write(p []byte) (int, error) {
	o.buf = append(o.buf, p...)
	for {
		i := bytes.Index(o.buf, []byte("\n\n"))
		if i < 0 {
			return len(p), nil
		}
		frame := o.buf[:i]
		if err := o.send(frame); err != nil {
			return 0, err
		}
		o.buf = o.buf[:copy(o.buf, o.buf[i+2:])]
	}
}

// send sends the data of one SSE frame.
func (o *wsEvents) send(frame []byte) error {
	var event, data []byte
	for len(frame) > 0 {
		var line []byte
		line, frame, _ = bytes.Cut(frame, []byte("\n"))
		if v, ok := bytes.CutPrefix(line, []byte("event: ")); ok {
			event = v
		} else if v, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			data = v
		}
	}
	if len(data) == 0 || string(data) == "[DONE]" {
		return nil
	}
	switch string(event) {
	case "response.completed", "response.incomplete", "response.failed", "error":
		o.ending.Store(true)
	}
	if string(event) == "error" {
		if rest, ok := bytes.CutPrefix(data, []byte(`{"type":"error",`)); ok {
			data = append([]byte(`{"type":"error","status":502,`), rest...)
		}
	}
	return o.w.send(data)
}

// warmup answers a response.create with generate: false: the request is authenticated,
// parsed and routed as a turn's, nothing is generated, and its response (no output) is
// kept on the connection for the next turn's previous_response_id.
func (s *Server) warmup(ctx *fasthttp.RequestCtx) {
	rt := s.runtime()
	rid := requestID(nil)
	key, err := requestKey(ctx, rt)
	if err != nil {
		s.fail(ctx, rid, err, "", "", "", "true")
		return
	}
	req, err := responsesin.ParseWithin(ctx.PostBody(), s.maxInflated)
	if err != nil {
		s.fail(ctx, rid, err, "", "", key.name, "true")
		return
	}
	if _, err := rt.routeFor(key, req.Core.Model); err != nil {
		s.fail(ctx, rid, err, unknownLabel, "", key.name, "true")
		return
	}
	t := wsTurnOf(ctx)
	id := newID("resp_")
	now := time.Now().Unix()
	enc := responsesin.NewEncoder(req, responsesin.EncoderOptions{ID: id, Model: req.Core.Model, Created: now, Stream: true})
	body := enc.Start(nil)
	body = enc.Finish(body, now)
	input := []byte(req.Input)
	if p := req.PreviousResponseID; p != "" && t != nil {
		if rec, err := t.local.Get(t.ctx, key.name, p); err == nil && rec.Upstream == "" {
			input = []byte(joinArrays(joinArrays(string(rec.Input), string(rec.Output)), req.Input))
		}
	}
	if t != nil {
		_ = t.local.Put(t.ctx, id, &responsestore.Record{Key: key.name, Response: enc.AppendResponse(nil), Input: input, Output: []byte("[]")})
	}
	ctx.SetStatusCode(http.StatusOK)
	ctx.SetBody(body)
}

// websockets are the open WebSocket connections, which Shutdown lets finish their turn
// and closes.
type websockets struct {
	mu    sync.Mutex
	conns map[*wsConn]struct{}
	stop  chan struct{} // closed by shutdown
	idle  chan struct{} // closed when the last connection ends after shutdown
}

func (ws *websockets) init() {
	if ws.stop == nil {
		ws.stop, ws.idle, ws.conns = make(chan struct{}), make(chan struct{}), map[*wsConn]struct{}{}
	}
}

// add registers w; false once shutdown began.
func (ws *websockets) add(w *wsConn) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.init()
	select {
	case <-ws.stop:
		return false
	default:
	}
	ws.conns[w] = struct{}{}
	return true
}

func (ws *websockets) remove(w *wsConn) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	delete(ws.conns, w)
	if len(ws.conns) == 0 {
		select {
		case <-ws.stop:
			close(ws.idle)
		default:
		}
	}
}

// stopping returns the channel shutdown closes.
func (ws *websockets) stopping() <-chan struct{} {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.init()
	return ws.stop
}

// shutdown tells every connection to close once its turn is over and waits for them, or
// for ctx.
func (ws *websockets) shutdown(ctx context.Context) {
	ws.mu.Lock()
	ws.init()
	select {
	case <-ws.stop:
		ws.mu.Unlock()
		return
	default:
	}
	close(ws.stop)
	if len(ws.conns) == 0 {
		close(ws.idle)
	}
	ws.mu.Unlock()
	select {
	case <-ws.idle:
	case <-ctx.Done():
	}
}

// previous returns the response id of key kept on t's connection; ErrNotFound when t is
// nil (not a WebSocket turn).
func (t *wsTurn) previous(ctx context.Context, key, id string) (*responsestore.Record, error) {
	if t == nil {
		return nil, responsestore.ErrNotFound
	}
	return t.local.Get(ctx, key, id)
}

// keep keeps rec, the response id, on t's connection, whatever its store; nothing when t
// is nil. A passthrough's response is kept as a translated one's (its whole conversation,
// not marked as stored upstream), so that a continuation by id rebuilds it whatever the
// upstream kept.
func (t *wsTurn) keep(ctx context.Context, id string, rec *responsestore.Record) {
	if t == nil {
		return
	}
	r := *rec
	r.Upstream = ""
	_ = t.local.Put(ctx, id, &r)
}
