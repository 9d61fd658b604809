package upstream

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate"
)

// Framing is how a backend frames its streamed answers.
type Framing uint8

const (
	// FramingSSE is text/event-stream (every backend but Bedrock): Pump.
	FramingSSE Framing = iota
	// FramingEventStream is AWS's binary event stream
	// (application/vnd.amazon.eventstream: Bedrock's InvokeModelWithResponseStream and
	// ConverseStream): PumpEventStream.
	FramingEventStream
)

// MaxEventStreamFrame bounds one event-stream frame (prelude, headers, payload and
// CRCs). A Bedrock chunk is a few hundred bytes; the SDK's own bound is 16 MiB of payload.
const MaxEventStreamFrame = 1 << 20

// Pump reads the streamed body of one of the client's answers with the backend's framing
// (Backend.Framing): the package function Pump for SSE, PumpEventStream for an AWS event
// stream, whose exception frames it turns into errors with the provider's DecodeError.
func (c *Client) Pump(ctx context.Context, body io.Reader, reads *sync.Pool, onEvent sse.Handler, afterRead, onEnd func() error) error {
	if c.framing == FramingEventStream {
		return pumpEventStream(ctx, body, c.name, c.provider, reads, onEvent, afterRead, onEnd)
	}
	return Pump(ctx, body, c.name, reads, onEvent, afterRead, onEnd)
}

// PumpEventStream reads an AWS event stream (the vnd.amazon.eventstream framing: each
// frame a prelude, typed headers, a payload and CRC32s), decoded by the AWS SDK's
// eventstream package, and hands each event frame to onEvent: its :event-type header as
// the type and its payload as the data. It calls afterRead whenever the frames read so far
// are handled and the next one is not yet buffered, and onEnd at a clean end of stream
// (between frames). An exception frame (:message-type exception, :exception-type e.g.
// throttlingException, modelStreamErrorException) is the error p.DecodeError makes of its
// payload with the exception's HTTP status (exceptionStatus), retryable as that status
// is; an error frame (:message-type error) is a 502. A frame over MaxEventStreamFrame, a
// frame that does not decode (bad CRC, bad lengths) or a stream cut mid-frame is an
// upstream error (Fault); a failed read is a retryable transport error. Once ctx is done
// (the client left) it returns ctx's error.
func PumpEventStream(ctx context.Context, body io.Reader, backend string, p translate.Provider, onEvent sse.Handler, afterRead, onEnd func() error) error {
	return pumpEventStream(ctx, body, backend, p, nil, onEvent, afterRead, onEnd)
}

// pumpEventStream is PumpEventStream with the frames' payload buffer, streamReadSize
// bytes, from reads (a pool of *[]byte, as Pump's; nil: a fresh one). The SDK's Decoder
// reads a payload into it through a bytes.Buffer, which grows it unless 512 bytes
// (bytes.MinRead) are free past the payload: a payload up to 3.5 KiB, as Bedrock's
// chunks are, is read without a new allocation.
func pumpEventStream(ctx context.Context, body io.Reader, backend string, p translate.Provider, reads *sync.Pool,
	onEvent sse.Handler, afterRead, onEnd func() error) error {
	br := bufio.NewReaderSize(body, streamReadSize)
	dec := eventstream.NewDecoder()
	bp := readBuf(reads, streamReadSize)
	defer putReadBuf(reads, bp)
	payload := (*bp)[:0]
	var typ []byte
	for {
		if afterRead != nil && br.Buffered() == 0 {
			if err := afterRead(); err != nil {
				return err
			}
		}
		prelude, err := br.Peek(4)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if err == io.EOF && len(prelude) == 0 {
				return onEnd()
			}
			if err == io.EOF {
				return Fault(backend, "ended the stream mid-frame")
			}
			return readError(ctx, backend, err)
		}
		if n := binary.BigEndian.Uint32(prelude); n > MaxEventStreamFrame {
			return Fault(backend, "sent an event-stream frame of "+strconv.FormatUint(uint64(n), 10)+" bytes, over the gateway's bound of "+strconv.Itoa(MaxEventStreamFrame))
		}
		msg, err := dec.Decode(br, payload[:0])
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			var le eventstream.LengthError
			var ce eventstream.ChecksumError
			switch {
			case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
				return Fault(backend, "ended the stream mid-frame")
			case errors.As(err, &le) || errors.As(err, &ce):
				return Fault(backend, "sent an event-stream frame that does not decode: "+clip(err.Error(), 120))
			}
			return readError(ctx, backend, err) // the connection failed mid-frame
		}
		payload = msg.Payload // its memory is reused for the next frame
		switch headerString(msg.Headers, ":message-type") {
		case "event":
			typ = append(typ[:0], headerString(msg.Headers, ":event-type")...)
			if err := onEvent(typ, msg.Payload); err != nil {
				return err
			}
		case "exception":
			typ := headerString(msg.Headers, ":exception-type")
			status := exceptionStatus(typ)
			ue := p.DecodeError(status, msg.Payload)
			ue.Retryable = translate.RetryableStatus(status)
			if ue.Code == "" {
				ue.Code = clip(typ, 64)
			}
			return ue
		case "error":
			return Fault(backend, "sent an event-stream error "+strconv.Quote(clip(headerString(msg.Headers, ":error-code"), 64))+": "+
				clip(headerString(msg.Headers, ":error-message"), 200))
		default:
			return Fault(backend, "sent an event-stream frame without a known :message-type")
		}
	}
}

// exceptionStatus is the HTTP status Bedrock's runtime API gives an exception that may
// come inside a stream (its API reference, InvokeModelWithResponseStream and
// ConverseStream: Errors); 502 for any other.
func exceptionStatus(typ string) int {
	switch typ {
	case "validationException":
		return 400
	case "modelTimeoutException":
		return 408
	case "modelStreamErrorException":
		return 424
	case "throttlingException":
		return 429
	case "internalServerException":
		return 500
	case "serviceUnavailableException":
		return 503
	}
	return 502
}

// headerString returns the value of a string header of an event-stream frame, "" if
// the frame has none.
func headerString(hs eventstream.Headers, name string) string {
	for i := range hs {
		if hs[i].Name == name {
			if v, ok := hs[i].Value.(eventstream.StringValue); ok {
				return string(v)
			}
		}
	}
	return ""
}
