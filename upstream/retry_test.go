package upstream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agate-gateway/agate/translate"
)

// TestRetries_Do: a retryable failure is tried again up to Max times, after the
// upstream's Retry-After when it asked for one within MaxDelay; a failure that is not
// retryable, a longer Retry-After, or again refusing ends the attempts with that error.
func TestRetries_Do(t *testing.T) {
	busy := &translate.UpstreamError{Status: 503, Retryable: true}
	later := &translate.UpstreamError{Status: 429, Retryable: true, RetryAfter: time.Millisecond}
	tooLate := &translate.UpstreamError{Status: 429, Retryable: true, RetryAfter: time.Hour}
	bad := &translate.UpstreamError{Status: 400}
	tests := []struct {
		name      string
		max       int
		errs      []error // the error of each attempt; past the end, nil
		refuse    bool    // again returns false
		wantTries int
		wantErr   error
		wantDelay []time.Duration // the delays again was told, when not backoff's
	}{
		{name: "success at once", max: 2, wantTries: 1},
		{name: "retried to success", max: 2, errs: []error{busy, busy}, wantTries: 3},
		{name: "out of retries", max: 1, errs: []error{busy, busy, busy}, wantTries: 2, wantErr: busy},
		{name: "no retries", max: 0, errs: []error{busy}, wantTries: 1, wantErr: busy},
		{name: "not retryable", max: 2, errs: []error{bad}, wantTries: 1, wantErr: bad},
		{name: "Retry-After within MaxDelay", max: 2, errs: []error{later}, wantTries: 2, wantDelay: []time.Duration{time.Millisecond}},
		{name: "Retry-After over MaxDelay", max: 2, errs: []error{tooLate}, wantTries: 1, wantErr: tooLate},
		{name: "again refuses", max: 2, errs: []error{busy}, refuse: true, wantTries: 1, wantErr: busy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Retries{Max: tt.max, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond}
			tries := 0
			var delays []time.Duration
			err := p.Do(context.Background(), func(_ context.Context, attempt int) error {
				if attempt != tries {
					t.Errorf("attempt %d, want %d", attempt, tries)
				}
				tries++
				if attempt < len(tt.errs) {
					return tt.errs[attempt]
				}
				return nil
			}, func(attempt int, delay time.Duration, err error) bool {
				if delay < 0 || delay > p.MaxDelay {
					t.Errorf("delay %v out of [0, %v]", delay, p.MaxDelay)
				}
				delays = append(delays, delay)
				return !tt.refuse
			})
			if tries != tt.wantTries || !errors.Is(err, tt.wantErr) {
				t.Errorf("%d tries, error %v; want %d, %v", tries, err, tt.wantTries, tt.wantErr)
			}
			if tt.wantDelay != nil && (len(delays) != len(tt.wantDelay) || delays[0] != tt.wantDelay[0]) {
				t.Errorf("delays %v, want %v", delays, tt.wantDelay)
			}
		})
	}
}

// TestRetries_DoStopsWithContext: an end of the context during the wait is its error.
func TestRetries_DoStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := Retries{Max: 5, BaseDelay: time.Hour, MaxDelay: time.Hour}
	err := p.Do(ctx, func(context.Context, int) error {
		return &translate.UpstreamError{Status: 503, Retryable: true}
	}, func(int, time.Duration, error) bool {
		cancel()
		return true
	})
	if err != context.Canceled {
		t.Errorf("Do = %v, want context.Canceled", err)
	}
}

// TestBackoff: the delay lies between half and all of base doubled per attempt, capped
// at max (an overflowing shift included).
func TestBackoff(t *testing.T) {
	tests := []struct {
		base, max time.Duration
		attempt   int
		lo, hi    time.Duration
	}{
		{base: 100 * time.Millisecond, max: time.Second, attempt: 0, lo: 50 * time.Millisecond, hi: 100 * time.Millisecond},
		{base: 100 * time.Millisecond, max: time.Second, attempt: 2, lo: 200 * time.Millisecond, hi: 400 * time.Millisecond},
		{base: 100 * time.Millisecond, max: time.Second, attempt: 5, lo: 500 * time.Millisecond, hi: time.Second},
		{base: time.Second, max: 10 * time.Second, attempt: 70, lo: 5 * time.Second, hi: 10 * time.Second},
	}
	for _, tt := range tests {
		for range 50 {
			if d := backoff(tt.base, tt.max, tt.attempt); d < tt.lo || d > tt.hi {
				t.Fatalf("backoff(%v, %v, %d) = %v, want within [%v, %v]", tt.base, tt.max, tt.attempt, d, tt.lo, tt.hi)
			}
		}
	}
}
