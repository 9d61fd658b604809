package respcache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/agate-gateway/agate/translate"
)

// Key returns the cache key of a request: the hex SHA-256 of its parts (each length
// prefixed, so that no two lists of parts share a key). The proxy passes the cache's
// owner, the API key's name, the route, its upstream and the request's Canonical form.
func Key(parts ...[]byte) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, p := range parts {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		h.Write(p)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// canonical is what of a translate.Request decides its answer: everything but the
// client's own body and spans, the stream flags (a streamed and a whole request share an
// entry) and the name the output cap came under. Its JSON is the same whichever client
// API the request came in (chat completions, Responses, Messages).
type canonical struct {
	Messages          []translate.Message      `json:"m"`
	Tools             []translate.Tool         `json:"t,omitempty"`
	ToolChoice        translate.ToolChoice     `json:"tc"`
	ParallelToolCalls *bool                    `json:"ptc,omitempty"`
	MaxTokens         int                      `json:"max,omitempty"`
	Temperature       *float64                 `json:"temp,omitempty"`
	TopP              *float64                 `json:"top_p,omitempty"`
	PresencePenalty   *float64                 `json:"pp,omitempty"`
	FrequencyPenalty  *float64                 `json:"fp,omitempty"`
	Stop              []string                 `json:"stop,omitempty"`
	N                 int                      `json:"n,omitempty"`
	Seed              *int64                   `json:"seed,omitempty"`
	Logprobs          bool                     `json:"lp,omitempty"`
	TopLogprobs       *int                     `json:"tlp,omitempty"`
	ResponseFormat    translate.ResponseFormat `json:"rf"`
	ReasoningEffort   string                   `json:"re,omitempty"`
	TopK              *int                     `json:"top_k,omitempty"`
	User              string                   `json:"user,omitempty"`
	Metadata          string                   `json:"meta,omitempty"`
	Extra             []translate.Field        `json:"x,omitempty"`
}

// ErrLiterals is returned by Canonical for a request whose strings are left escaped.
var ErrLiterals = errors.New("respcache: the request's strings are not decoded")

// Canonical appends to dst the canonical form of req (its JSON, strings decoded): two
// requests with the same form ask for the same answer, from whichever client API. A
// request whose strings a lazy parse left escaped (req.Literals) has none: decode it
// first.
func Canonical(dst []byte, req *translate.Request) ([]byte, error) {
	if req.Literals != "" {
		return dst, ErrLiterals
	}
	b, err := json.Marshal(canonical{Messages: req.Messages, Tools: req.Tools, ToolChoice: req.ToolChoice,
		ParallelToolCalls: req.ParallelToolCalls, MaxTokens: req.MaxTokens, Temperature: req.Temperature, TopP: req.TopP,
		PresencePenalty: req.PresencePenalty, FrequencyPenalty: req.FrequencyPenalty, Stop: req.Stop, N: req.N, Seed: req.Seed,
		Logprobs: req.Logprobs, TopLogprobs: req.TopLogprobs, ResponseFormat: req.ResponseFormat, ReasoningEffort: req.ReasoningEffort,
		TopK: req.TopK, User: req.User, Metadata: req.Metadata, Extra: req.Extra})
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}
