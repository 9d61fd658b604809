package cloudauth

import (
	"context"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/upstream"
)

// RefreshMargin is how long before its expiry a cached token is refreshed: long enough
// that a request never sets out with a token that expires on the way, as the clouds' own
// SDKs do (azidentity refreshes 5 minutes ahead, oauth2 10 seconds).
const RefreshMargin = 3 * time.Minute

// fetchTimeout bounds one token fetch, which runs on its own context: the request that
// started it may leave, and the others still wait for it.
const fetchTimeout = 30 * time.Second

// Token is a bearer token and when it expires (zero: never).
type Token struct {
	Value  string
	Expiry time.Time
}

// Fetch gets a new token. Its error may hold the library's details; Tokens never shows it.
type Fetch func(ctx context.Context) (Token, error)

// Tokens is a bearer-token upstream.Signer: it sets Authorization: Bearer <token> with a
// cached token, refreshed (Fetch) when it is within RefreshMargin of its expiry, one
// refresh at a time shared by every request that waits for it. Safe for concurrent use.
type Tokens struct {
	backend, source string
	fetch           Fetch
	now             func() time.Time

	mu       sync.Mutex
	tok      Token
	header   string   // "Bearer " + tok.Value, made once per token
	inflight *refresh // the refresh under way, nil when none
}

// refresh is one token fetch that requests wait for: done is closed once tok and err are set.
type refresh struct {
	done chan struct{}
	tok  Token
	err  error
}

// NewTokens returns the signer of backend whose tokens fetch gets; source names where
// they come from in errors (upstream.AuthFailed). now is the clock (nil: time.Now).
func NewTokens(backend, source string, fetch Fetch, now func() time.Time) *Tokens {
	if now == nil {
		now = time.Now
	}
	return &Tokens{backend: backend, source: source, fetch: fetch, now: now}
}

// Sign sets req's Authorization header to a current bearer token. With a cached token
// it takes a lock and copies the header: no allocation.
func (t *Tokens) Sign(ctx context.Context, req *fasthttp.Request) error {
	if h, ok := t.cached(); ok {
		req.Header.Set("Authorization", h)
		return nil
	}
	tok, err := t.Token(ctx)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return nil
}

// cached returns the Authorization value of the cached token while it is good.
func (t *Tokens) cached() (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.header, t.good()
}

// good reports whether the cached token is valid for at least RefreshMargin; t.mu is held.
func (t *Tokens) good() bool {
	return t.tok.Value != "" && (t.tok.Expiry.IsZero() || t.now().Add(RefreshMargin).Before(t.tok.Expiry))
}

// Token returns a token valid for at least RefreshMargin, from the cache or from the one
// refresh under way or started now. Its error is ctx's when ctx ended first, else
// upstream.AuthFailed.
func (t *Tokens) Token(ctx context.Context) (string, error) {
	t.mu.Lock()
	if t.good() {
		v := t.tok.Value
		t.mu.Unlock()
		return v, nil
	}
	r := t.inflight
	if r == nil {
		r = &refresh{done: make(chan struct{})}
		t.inflight = r
		go t.run(context.WithoutCancel(ctx), r)
	}
	t.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if r.err != nil {
		return "", upstream.AuthFailed(t.backend, t.source)
	}
	return r.tok.Value, nil
}

// run fetches a token for r and caches it when it is good.
func (t *Tokens) run(ctx context.Context, r *refresh) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	tok, err := t.fetch(ctx)
	if err == nil && tok.Value == "" {
		err = errEmptyToken
	}
	t.mu.Lock()
	r.tok, r.err = tok, err
	if err == nil {
		t.tok, t.header = tok, "Bearer "+tok.Value
	}
	t.inflight = nil
	t.mu.Unlock()
	close(r.done)
}

type tokenError string

func (e tokenError) Error() string { return string(e) }

const errEmptyToken = tokenError("the credential returned an empty token")
