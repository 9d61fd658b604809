package proxy

import (
	"bytes"
	"slices"
	"strings"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/metrics"
)

// A client's anthropic-beta header switches features on under the operator's credential,
// some of them billed at other prices (context-1m) or reaching beyond the request
// (files-api, mcp-client). The Messages passthrough forwards only the names a backend's
// allowed_betas list (config.DefaultAnthropicBetas when unset) and counts the others in
// gateway_anthropic_betas_dropped_total{backend}.

// betaPolicy is a backend's allowed_betas, resolved once (newBackend).
type betaPolicy struct {
	all     bool     // "*": every name goes
	allowed []string // the names that go, otherwise
}

func newBetaPolicy(bc config.Backend) betaPolicy {
	allowed := bc.AllowedBetas
	if allowed == nil { // a config built in code; Load fills the default in
		allowed = config.DefaultAnthropicBetas()
	}
	return betaPolicy{all: slices.Contains(allowed, "*"), allowed: allowed}
}

// filterBetas returns the names of the anthropic-beta header values that p allows, joined
// by commas in the client's order ("" when none), and how many names it dropped. A value
// is a comma-separated list; space and tab around a name are ignored, empty names skipped.
func (p betaPolicy) filterBetas(values [][]byte) (kept string, dropped int) {
	var b strings.Builder
	for _, v := range values {
		for len(v) > 0 {
			var name []byte
			name, v, _ = bytes.Cut(v, []byte{','})
			name = bytes.Trim(name, " \t")
			if len(name) == 0 {
				continue
			}
			if !p.all && !slices.Contains(p.allowed, string(name)) {
				dropped++
				continue
			}
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.Write(name)
		}
	}
	return b.String(), dropped
}

// clientBetas are the anthropic-beta names a Messages passthrough request came with; each
// backend the request goes to gets those its policy allows (valueFor).
type clientBetas struct {
	values [][]byte // the client's header values, copied
	// per holds the value already worked out for a backend, for the request's other
	// attempts: its dropped names are counted once a request.
	per []backendBetas
}

type backendBetas struct {
	name, value string // the backend's name, and its anthropic-beta value
}

// valueFor returns the anthropic-beta value for the backend named name, whose policy is
// p: the client's names p allows ("" when none). It is worked out once a request and
// backend, and the names dropped counted then in m.
func (cb *clientBetas) valueFor(name string, p betaPolicy, m *metrics.Metrics) string {
	for _, b := range cb.per {
		if b.name == name {
			return b.value
		}
	}
	value, dropped := p.filterBetas(cb.values)
	if dropped > 0 {
		m.AnthropicBetasDropped.WithLabelValues(name).Add(float64(dropped))
	}
	cb.per = append(cb.per, backendBetas{name: name, value: value})
	return value
}
