package upstream

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/agate-gateway/agate/translate"
)

// Retries is a backend's retry policy.
type Retries struct {
	// Max is the number of retries after the first attempt; 0 or less: none.
	Max int
	// BaseDelay is the first backoff delay, doubled for each retry after it.
	BaseDelay time.Duration
	// MaxDelay caps one delay, a Retry-After included: an upstream that asks for longer
	// is not retried.
	MaxDelay time.Duration
}

// Do runs try (attempt counts from 0) until it succeeds or fails for good: with an error
// that is not Retryable, on the last of 1+Max attempts, once ctx is done, when the
// upstream asks for a Retry-After over MaxDelay, or when again returns false. Before
// each retry it calls again with the attempt that failed, the delay it is to wait and
// the error, then waits the delay: the upstream's Retry-After, else a full-jitter
// exponential backoff (between half and all of BaseDelay doubled for each retry before,
// capped at MaxDelay). An end of ctx during the wait returns ctx's error. again may be
// nil.
func (p Retries) Do(ctx context.Context, try func(ctx context.Context, attempt int) error,
	again func(attempt int, delay time.Duration, err error) bool) error {
	for attempt := 0; ; attempt++ {
		err := try(ctx, attempt)
		if err == nil || !Retryable(err) || attempt >= p.Max || ctx.Err() != nil {
			return err
		}
		delay := backoff(p.BaseDelay, p.MaxDelay, attempt)
		var ue *translate.UpstreamError
		if errors.As(err, &ue) && ue.RetryAfter > 0 {
			if ue.RetryAfter > p.MaxDelay {
				return err // the upstream asks for longer than we may wait
			}
			delay = ue.RetryAfter
		}
		if again != nil && !again(attempt, delay, err) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// backoff returns the full-jitter exponential delay for a retry after attempt (from 0):
// between half and all of base doubled attempt times, capped at max.
func backoff(base, max time.Duration, attempt int) time.Duration {
	d := base << attempt
	if d > max || d <= 0 {
		d = max
	}
	return time.Duration(rand.Int64N(int64(d)/2+1)) + d/2
}
