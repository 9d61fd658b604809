package cloudauth

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/upstream"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// counter is a Fetch that hands out token-1, token-2, ... each valid for an hour from
// the clock's now.
type counter struct {
	clock *clock
	n     atomic.Int32
}

func (c *counter) fetch(context.Context) (Token, error) {
	n := c.n.Add(1)
	return Token{Value: "token-" + string(rune('0'+n)), Expiry: c.clock.Now().Add(time.Hour)}, nil
}

func sign(t *testing.T, s *Tokens) string {
	t.Helper()
	var req fasthttp.Request
	if err := s.Sign(context.Background(), &req); err != nil {
		t.Fatal(err)
	}
	return string(req.Header.Peek("Authorization"))
}

// TestTokens_RefreshedBeforeExpiry: a cached token is used until it is within
// RefreshMargin of its expiry; from then on the request that signs gets a new one, before
// the old one has expired.
func TestTokens_RefreshedBeforeExpiry(t *testing.T) {
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	src := &counter{clock: clk}
	s := NewTokens("b", "test source", src.fetch, clk.Now)
	steps := []struct {
		advance time.Duration
		want    string
	}{
		{0, "Bearer token-1"},
		{30 * time.Minute, "Bearer token-1"},                // 30 min left
		{26*time.Minute + 59*time.Second, "Bearer token-1"}, // 3 min 1 s left: still good
		{2 * time.Second, "Bearer token-2"},                 // 2 min 59 s left: refreshed, not yet expired
		{time.Minute, "Bearer token-2"},
	}
	for i, st := range steps {
		clk.add(st.advance)
		if got := sign(t, s); got != st.want {
			t.Errorf("step %d: Authorization %q, want %q", i, got, st.want)
		}
	}
	if n := src.n.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}
}

// TestTokens_SingleFlight: concurrent requests that find no valid token wait for one
// fetch, and all get its token.
func TestTokens_SingleFlight(t *testing.T) {
	release := make(chan struct{})
	var fetches atomic.Int32
	s := NewTokens("b", "test source", func(context.Context) (Token, error) {
		fetches.Add(1)
		<-release
		return Token{Value: "shared", Expiry: time.Now().Add(time.Hour)}, nil
	}, nil)
	const n = 16
	var wg sync.WaitGroup
	got := make([]string, n)
	for i := range n {
		wg.Go(func() {
			tok, err := s.Token(context.Background())
			if err != nil {
				t.Error(err)
			}
			got[i] = tok
		})
	}
	for s.waiting() == nil { // the first request started the fetch
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if f := fetches.Load(); f != 1 {
		t.Errorf("%d fetches for %d concurrent requests, want 1", f, n)
	}
	for i, tok := range got {
		if tok != "shared" {
			t.Errorf("request %d got %q", i, tok)
		}
	}
}

// TestTokens_FailureNamesTheSourceOnly: a failed fetch is upstream_auth_failed naming the
// backend and the source, never the library's error (which may quote a secret); it is
// not cached, and a caller whose context ends stops waiting.
func TestTokens_FailureNamesTheSourceOnly(t *testing.T) {
	fail := true
	s := NewTokens("aoai", "entra client secret (AZURE_CLIENT_SECRET)", func(context.Context) (Token, error) {
		if fail {
			return Token{}, errors.New("AADSTS7000215: invalid secret s3cr3t-value")
		}
		return Token{Value: "ok", Expiry: time.Now().Add(time.Hour)}, nil
	}, nil)
	_, err := s.Token(context.Background())
	ue := upstream.AsError(err)
	if ue == nil || ue.Status != 502 || ue.Code != "upstream_auth_failed" {
		t.Fatalf("error %v, want a 502 upstream_auth_failed", err)
	}
	if !strings.Contains(ue.Message, "aoai") || !strings.Contains(ue.Message, "AZURE_CLIENT_SECRET") || strings.Contains(ue.Message, "s3cr3t") {
		t.Errorf("message %q", ue.Message)
	}
	fail = false
	if tok, err := s.Token(context.Background()); err != nil || tok != "ok" {
		t.Errorf("after a failure: %q, %v; want a new fetch", tok, err)
	}

	block := NewTokens("b", "src", func(ctx context.Context) (Token, error) { <-ctx.Done(); return Token{}, ctx.Err() }, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := block.Token(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled wait: %v", err)
	}
}

// waiting returns the refresh under way, for tests.
func (t *Tokens) waiting() *refresh {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inflight
}

// BenchmarkTokens_Sign is the cost a bearer-token backend adds to each request: setting
// the Authorization header from the cached token.
func BenchmarkTokens_Sign(b *testing.B) {
	s := NewTokens("b", "src", func(context.Context) (Token, error) {
		return Token{Value: "ya29.a0AfB_byC-benchmark-token-of-a-realistic-length-0123456789", Expiry: time.Now().Add(time.Hour)}, nil
	}, nil)
	var req fasthttp.Request
	ctx := context.Background()
	if err := s.Sign(ctx, &req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Sign(ctx, &req); err != nil {
			b.Fatal(err)
		}
	}
}
