package proxy

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/mock"
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/responses"
	"github.com/agate-gateway/agate/upstream"
)

// backend is one configured backend: its provider, and the client of its upstream
// (package upstream: the connection pool, timeouts, the exchange).
type backend struct {
	name string
	typ  string
	// dialect is the API its upstream speaks, for the passthrough (allOfType): its type,
	// or for azure openai or responses (azure.api): a resource's deployments answer the
	// OpenAI APIs under their own paths and credentials.
	dialect  string
	cfg      config.Backend
	provider translate.Provider
	// client sends the backend's requests; nil for a localProvider.
	client *upstream.Client
	// baseURL is the configured base URL without a trailing slash (the attempt spans).
	baseURL string
	retries upstream.Retries
	// retryTimeouts is retries.on_timeout retry: a silent upstream (upstream.TimedOut) is
	// retried like a reset; else the request falls back at once.
	retryTimeouts bool
	// betas is allowed_betas: the client anthropic-beta names forwarded.
	betas betaPolicy
	// uncounted holds the bedrock Converse models CountTokens refused (converseCount).
	uncounted sync.Map
}

// localProvider is a provider that answers in process, without an upstream exchange: its
// Answer replaces the round trip, and its translate.Provider methods are never asked to
// phrase or decode anything (the mock backend, translate/mock).
type localProvider interface {
	translate.Provider
	// Answer emits the events of the turn for req, as a decoder would.
	Answer(ctx context.Context, req *translate.Request, upstreamModel string, emit translate.Emit) error
}

// providerFor returns the provider of a backend type (config.Backend.Type, validated by
// config): the one table from type to provider, the cloud backends' aside (cloudOf, whose
// providers depend on the backend's config). Adding a backend type is a row here (or
// there) and its name in config's list.
func providerFor(typ string) (translate.Provider, bool) {
	switch typ {
	case "anthropic":
		return anthropic.New(), true
	case "gemini":
		return gemini.New(), true
	case "responses":
		return responses.New(), true
	case "openai":
		return openai.New(), true
	case "mock":
		return mock.New(), true
	}
	return nil, false
}

// newBackend builds the backend of bc, a backend of a validated, defaulted config (see
// config.Parse): its values are used as they are, mapped to upstream's options.
func newBackend(name string, bc config.Backend) (*backend, error) {
	return buildBackend(name, bc, cloudEnv{})
}

// buildBackend is newBackend with the environment of the cloud credentials.
func buildBackend(name string, bc config.Backend, env cloudEnv) (*backend, error) {
	b := &backend{name: name, typ: bc.Type, dialect: dialectOf(bc), cfg: bc, betas: newBetaPolicy(bc),
		retries:       upstream.Retries{Max: bc.Retries.Max, BaseDelay: bc.Retries.BaseDelay, MaxDelay: bc.Retries.MaxDelay},
		retryTimeouts: bc.Retries.OnTimeout == config.OnTimeoutRetry}
	p, ok := providerFor(bc.Type)
	c, isCloud := cloudOf(bc.Type)
	if isCloud {
		p, ok = c.provider(bc), true
	}
	if !ok {
		return nil, fmt.Errorf("backends.%s.type: unknown backend type %q", name, bc.Type)
	}
	b.provider = p
	if _, local := p.(localProvider); local {
		return b, nil
	}
	t := bc.Timeouts
	ub := upstream.Backend{Name: name, BaseURL: bc.BaseURL, APIKey: bc.APIKey, Headers: bc.Headers, MaxConns: bc.MaxConns,
		MaxResponseBytes: bc.MaxResponseBytes, Timeouts: upstream.Timeouts{Connect: t.Connect, Header: t.Header, StreamIdle: t.StreamIdle, PoolWait: t.PoolWait}}
	if isCloud {
		if err := c.configure(name, bc, env, &ub); err != nil {
			return nil, err
		}
	}
	client, err := upstream.New(ub, p)
	if err != nil {
		return nil, err
	}
	b.client, b.baseURL = client, strings.TrimRight(bc.BaseURL, "/")
	return b, nil
}

func (b *backend) sameConfig(bc config.Backend) bool { return reflect.DeepEqual(b.cfg, bc) }

// dialectOf is backend bc's dialect (backend.dialect).
func dialectOf(bc config.Backend) string {
	if bc.Type != "azure" {
		return bc.Type
	}
	if bc.Azure.API == "responses" {
		return "responses"
	}
	return "openai"
}
