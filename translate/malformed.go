package translate

import "errors"

// ErrMalformedEvent is matched (errors.Is) by the error a StreamDecoder.Event returns for
// one event whose data it could not read at all (not JSON, or cut inside its JSON), the
// decoder's state left as it was before that event: its caller may skip the event and
// feed the next one. Any other error of Event ends the stream.
var ErrMalformedEvent = errors.New("malformed upstream event")

// MalformedEvent marks ue as the error of one unreadable event (ErrMalformedEvent). The
// result is still ue under errors.As, and an ErrUpstream.
func MalformedEvent(ue *UpstreamError) error { return malformedEvent{ue} }

type malformedEvent struct{ *UpstreamError }

func (e malformedEvent) Unwrap() error { return e.UpstreamError }

// Is reports whether target is ErrMalformedEvent; ErrUpstream is matched by the
// UpstreamError it wraps.
func (e malformedEvent) Is(target error) bool { return target == ErrMalformedEvent }
