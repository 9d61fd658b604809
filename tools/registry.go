package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrUnknownTool is wrapped by [Registry.Resolve] errors for names that match no source or
// tool.
var ErrUnknownTool = errors.New("unknown tool")

// Definition is one tool as offered to a model. Definitions returned by a Registry are
// shared: callers must not modify Parameters.
type Definition struct {
	// Name is the model-facing name: 1 to 64 characters of [a-zA-Z0-9_-], unique in the
	// Registry. MCP tools are "<source>__<tool>" (shortened with a hash suffix when that is
	// too long or has other characters); http and builtin sources expose one tool named
	// after the source.
	Name string
	// Source is the configured source name.
	Source string
	// Tool is the tool's own name in its source (the MCP tool name, the builtin name, or
	// the source name for a webhook); "Source/Tool" selects it in a key's tool list.
	Tool string
	// Description tells the model what the tool does.
	Description string
	// Parameters is the JSON Schema (an object schema) of the arguments.
	Parameters json.RawMessage
	// ReadOnly reports the tool has no side effects (MCP readOnlyHint, or
	// SourceOptions.ReadOnly): the loop may run read-only calls of one turn concurrently.
	ReadOnly bool
	// Cacheable reports results are cached (SourceOptions.Cache or Override.Cache, default
	// ReadOnly).
	Cacheable bool
	// Timeout bounds one call (default DefaultTimeout).
	Timeout time.Duration
	// MaxResultBytes bounds the result content; longer content is truncated with a marker
	// (default DefaultMaxResultBytes).
	MaxResultBytes int
}

// Result is what a tool call gives back to the model.
type Result struct {
	// Content is the text shown to the model.
	Content string
	// IsError marks a failed call; Content then says why, for the model to correct.
	IsError bool
}

// Outcomes reported to [Observer.ToolCall]; the set is closed so metric labels stay bounded.
const (
	OutcomeOK               = "ok"                // the tool ran and succeeded
	OutcomeCached           = "cached"            // served from the cache, nothing ran
	OutcomeTruncated        = "truncated"         // succeeded, content cut to MaxResultBytes
	OutcomeError            = "error"             // the tool ran and failed, or could not be reached
	OutcomeInvalidArguments = "invalid_arguments" // arguments not a JSON object or failing the schema
	OutcomeTimeout          = "timeout"           // the tool's timeout expired
	OutcomeCancelled        = "cancelled"         // the caller's context ended first
	OutcomeUnknown          = "unknown"           // no tool has that name
)

// UnknownToolLabel is the tool name reported to [Observer.ToolCall] for calls of a name the
// Registry does not know, so a model inventing names cannot grow metric label sets. It
// cannot clash with a real tool (model-facing names have no '(').
const UnknownToolLabel = "(unknown)"

// Observer receives the Registry's metrics events. Methods may be called concurrently and
// must not block. A nil Observer is allowed.
type Observer interface {
	// ToolCall reports one finished Call: the model-facing tool name (or UnknownToolLabel),
	// one of the Outcome constants, and the wall time of the call.
	ToolCall(tool, outcome string, d time.Duration)
	// CacheLookup reports a cache lookup by a cacheable tool's call.
	CacheLookup(hit bool)
	// CacheEviction reports an entry leaving the built-in cache because of its bound or TTL.
	CacheEviction()
}

type nopObserver struct{}

func (nopObserver) ToolCall(string, string, time.Duration) {}
func (nopObserver) CacheLookup(bool)                       {}
func (nopObserver) CacheEviction()                         {}

// Option adjusts a Registry built by [New].
type Option func(*options)

type options struct {
	cache Cache
	now   func() time.Time
}

// WithCache makes the Registry use c instead of building an [LRUCache] from its CacheOptions
// (for example a store shared by several gateway replicas). Evictions of a custom cache are
// not reported to the Observer.
func WithCache(c Cache) Option { return func(o *options) { o.cache = c } }

// WithClock sets the clock of the builtin tools (default time.Now).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// Registry holds every configured tool and executes calls. It is safe for concurrent use.
// The set of MCP tools changes when a server announces a new list, and the set of sources
// when [Registry.Update] is called; Resolve and Call always see the latest one.
type Registry struct {
	logger  *slog.Logger
	obs     Observer
	cache   Cache
	flights flightGroup
	opts    options

	// cacheByCaller keeps cache entries and shared executions apart per caller (cache
	// scope key); immutable after New.
	cacheByCaller bool

	// updateMu serializes Update and Close: one set of sources is being replaced at a time.
	updateMu sync.Mutex

	mu       sync.RWMutex
	sources  map[string]*sourceEntry // the running sources, by name
	order    []string                // source names, sorted
	byName   map[string]*tool        // model-facing name -> tool
	bySource map[string][]*tool      // source -> its tools, sorted by Tool
	closed   bool
}

// sourceEntry is one started source and the options it was started with. Update replaces
// an entry (a new one for changed options), never edits its cfg or src; the remaining
// fields are guarded by Registry.mu.
type sourceEntry struct {
	name string
	cfg  SourceOptions
	src  source

	installed bool // in Registry.sources (Update committed it)
	retired   bool // removed or replaced by Update, or the Update that started it failed
	// connected reports the source has given a tool list at least once: until then a key's
	// "source/tool" resolves to nothing instead of an unknown tool.
	connected bool
	// pending is a list the source published before Update installed it; installing
	// applies it.
	pending    []toolSpec
	hasPending bool
}

// tool is one registered tool: its definition, compiled schema and executor.
type tool struct {
	def    Definition
	schema *jsonschema.Schema
	src    source
	// mask passes results through redact.Mask (mask_results, default true).
	mask bool
	// hints are the source's MCP annotations (serve.go); ReadOnly is def's.
	hints Hints
}

// source is one configured tool source. Implementations are safe for concurrent use.
type source interface {
	// start connects and returns the source's tools. A later change of the tool list is
	// passed to the publish function the source was built with.
	start(ctx context.Context) ([]toolSpec, error)
	// call runs tool with args (a JSON object). An error means the call could not be made
	// or completed; a tool's own failure is a Result with IsError.
	call(ctx context.Context, tool string, args json.RawMessage) (Result, error)
	// ready is nil while the source can take calls.
	ready() error
	close() error
}

// toolSpec is a tool as a source describes it, before its SourceOptions and validation apply.
type toolSpec struct {
	Tool        string
	Description string
	Parameters  json.RawMessage // nil means an empty object schema
	ReadOnly    bool
	// NoCacheByDefault marks a read-only tool whose result must not be reused unless the
	// its options say so (time_now).
	NoCacheByDefault bool
	// NamedAfterSource gives the tool the source's name as its model-facing name (single-tool
	// sources: http, builtin).
	NamedAfterSource bool
	// Hints are an MCP tool's annotations (serve.go).
	Hints Hints
}

// emptyObjectSchema is the parameters schema of a tool that declares none.
const emptyObjectSchema = `{"type":"object","properties":{}}`

// New builds a Registry from the configured sources and starts every one of them, within
// ctx, as [Registry.Update] does. It fails if a source cannot be started or a definition is
// bad: an invalid source name, a schema that does not compile, or two tools with the same
// model-facing name. An MCP server that cannot be reached is not a failure unless its
// source is Required: the source is kept, without tools, reported by Ready, and retried in
// the background with backoff; its tools appear when it comes up. Tools published later by
// an MCP server's list-changed notification are validated the same way, but a bad one is
// logged and left out instead. cache sizes the built-in [LRUCache] unless [WithCache] is
// given, and says whether the callers named by [WithCaller] share cached results. A nil
// obs or logger is allowed. When New fails it closes whatever it had started; otherwise the
// caller must Close the Registry.
func New(ctx context.Context, sources map[string]SourceOptions, cache CacheOptions, obs Observer, logger *slog.Logger, opts ...Option) (*Registry, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.now == nil {
		o.now = time.Now
	}
	if obs == nil {
		obs = nopObserver{}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Registry{
		logger:   logger,
		obs:      obs,
		cache:    o.cache,
		opts:     o,
		sources:  make(map[string]*sourceEntry, len(sources)),
		byName:   make(map[string]*tool),
		bySource: make(map[string][]*tool),
	}
	r.cacheByCaller = !cache.Shared
	if r.cache == nil {
		r.cache = NewLRUCache(cache.MaxEntries, cache.TTL, obs.CacheEviction)
	}
	if err := r.Update(ctx, sources); err != nil {
		return nil, errors.Join(err, r.Close())
	}
	return r, nil
}

// newSource builds the source of ent from its options. An MCP source's later tool lists go
// to r.publish with ent, so that a list from a source Update has since replaced or removed
// is ignored.
func (r *Registry) newSource(ent *sourceEntry) (source, error) {
	name, cfg := ent.name, ent.cfg
	publish := func(specs []toolSpec) { r.publish(ent, specs) }
	switch cfg.Type {
	case SourceMCP:
		return newMCPSource(name, cfg, r.logger.With("tool_source", name), publish)
	case SourceHTTP:
		return newWebhookSource(name, cfg)
	case SourceBuiltin:
		return newBuiltinSource(name, cfg, r.opts.now)
	default:
		return nil, fmt.Errorf("unknown type %q (want mcp, http or builtin)", cfg.Type)
	}
}

// applySettings sets a definition's timeout, cache flag and result bound from its source's
// options: the tool's override first, then the source, then the defaults.
func applySettings(d *Definition, cfg SourceOptions, spec toolSpec) {
	ov := cfg.Overrides[spec.Tool]
	d.Timeout = firstPositive(ov.Timeout, cfg.Timeout, DefaultTimeout)
	d.MaxResultBytes = firstPositive(ov.MaxResultBytes, cfg.MaxResultBytes, DefaultMaxResultBytes)
	switch {
	case ov.Cache != nil:
		d.Cacheable = *ov.Cache
	case cfg.Cache != nil:
		d.Cacheable = *cfg.Cache
	default:
		d.Cacheable = spec.ReadOnly && !spec.NoCacheByDefault
	}
}

func firstPositive[T int | time.Duration](vs ...T) T {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}

func warnUnusedOverrides(logger *slog.Logger, source string, cfg SourceOptions, specs []toolSpec) {
	for name := range cfg.Overrides {
		if !slices.ContainsFunc(specs, func(s toolSpec) bool { return s.Tool == name }) {
			logger.Warn("tool override names no tool of its source", "tool_source", source, "tool", name)
		}
	}
}

// buildTools validates specs, the tool list of ent's source, into tools sorted by Tool. The
// errors are those of bad tools (a schema that does not compile, a name used twice in the
// list); the good tools are returned with them.
func buildTools(ent *sourceEntry, specs []toolSpec) ([]*tool, error) {
	built := make([]*tool, 0, len(specs))
	var errs []error
	seen := make(map[string]bool, len(specs))
	for _, spec := range specs {
		t, err := buildTool(ent.name, spec, ent.cfg, ent.src)
		if err == nil && seen[t.def.Name] {
			err = fmt.Errorf("tool %q of source %q: model-facing name %q is used twice", spec.Tool, ent.name, t.def.Name)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		seen[t.def.Name] = true
		built = append(built, t)
	}
	slices.SortFunc(built, func(a, b *tool) int { return strings.Compare(a.def.Tool, b.def.Tool) })
	return built, errors.Join(errs...)
}

// publish takes a tool list an MCP source announced (list changed, reconnected). A list
// from an entry that Update retired is dropped; one from an entry Update has started but
// not yet installed is kept for the install.
func (r *Registry) publish(ent *sourceEntry, specs []toolSpec) {
	r.mu.Lock()
	switch {
	case ent.retired || r.closed:
		r.mu.Unlock()
		r.logger.Debug("tool list of a stopped or replaced source ignored", "tool_source", ent.name)
		return
	case !ent.installed:
		ent.pending, ent.hasPending = specs, true
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	r.setTools(ent, specs)
}

// setTools replaces the tools of an installed source with specs, leaving out (and logging)
// bad tools and tools whose model-facing name another source uses. It does nothing if ent
// is no longer the source's running entry.
func (r *Registry) setTools(ent *sourceEntry, specs []toolSpec) {
	built, err := buildTools(ent, specs)
	errs := []error{err}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sources[ent.name] != ent {
		return
	}
	kept := built[:0]
	for _, t := range built {
		if other, ok := r.byName[t.def.Name]; ok && other.def.Source != ent.name {
			errs = append(errs, fmt.Errorf("tool %q of source %q: model-facing name %q is already used by tool %q of source %q",
				t.def.Tool, ent.name, t.def.Name, other.def.Tool, other.def.Source))
			continue
		}
		kept = append(kept, t)
	}
	if err := errors.Join(errs...); err != nil {
		r.logger.Error("tool list update: left out bad tools", "tool_source", ent.name, "error", err)
	}
	for _, old := range r.bySource[ent.name] {
		delete(r.byName, old.def.Name)
	}
	for _, t := range kept {
		r.byName[t.def.Name] = t
	}
	r.bySource[ent.name] = kept
	ent.connected = true
}

func buildTool(sourceName string, spec toolSpec, cfg SourceOptions, src source) (*tool, error) {
	if spec.Tool == "" {
		return nil, fmt.Errorf("source %q: a tool has an empty name", sourceName)
	}
	params := spec.Parameters
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage(emptyObjectSchema)
	}
	sch, err := compileSchema(params)
	if err != nil {
		return nil, fmt.Errorf("tool %q of source %q: parameters schema: %w", spec.Tool, sourceName, err)
	}
	name := modelName(sourceName, spec.Tool)
	if spec.NamedAfterSource {
		name = sourceName
	}
	d := Definition{
		Name:        name,
		Source:      sourceName,
		Tool:        spec.Tool,
		Description: spec.Description,
		Parameters:  params,
		ReadOnly:    spec.ReadOnly,
	}
	applySettings(&d, cfg, spec)
	return &tool{def: d, schema: sch, src: src, mask: cfg.MaskResults == nil || *cfg.MaskResults, hints: spec.Hints}, nil
}

// Resolve returns the definitions named by a key's tool list: a source name selects all of
// its current tools (sorted by tool name), "source/tool" one tool by its own name. The result
// keeps the order of names and holds each tool once. A name matching nothing is an error
// wrapping ErrUnknownTool. A source whose server is down still resolves, to the tools it had;
// one that has never connected (an MCP server not reachable since it was started, retried
// in the background) resolves to no tools, for its own name and for any "source/tool", so
// that a key naming it neither fails nor offers its tools until it is up.
func (r *Registry) Resolve(names []string) ([]Definition, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var defs []Definition
	seen := make(map[string]bool)
	add := func(t *tool) {
		if !seen[t.def.Name] {
			seen[t.def.Name] = true
			defs = append(defs, t.def)
		}
	}
	var errs []error
	for _, n := range names {
		srcName, toolName, single := strings.Cut(n, "/")
		ent, ok := r.sources[srcName]
		if !ok {
			errs = append(errs, fmt.Errorf("resolving %q: %w source %q", n, ErrUnknownTool, srcName))
			continue
		}
		if !ent.connected {
			continue
		}
		if !single {
			for _, t := range r.bySource[srcName] {
				add(t)
			}
			continue
		}
		i, found := slices.BinarySearchFunc(r.bySource[srcName], toolName, func(t *tool, name string) int {
			return strings.Compare(t.def.Tool, name)
		})
		if !found {
			errs = append(errs, fmt.Errorf("resolving %q: %w %q in source %q", n, ErrUnknownTool, toolName, srcName))
			continue
		}
		add(r.bySource[srcName][i])
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return defs, nil
}

// Ready returns nil when every Required source can take calls, otherwise an error naming
// each that cannot and why (/readyz answers 503: the gateway was told not to run without
// it). Sources that are not Required are Degraded's.
func (r *Registry) Ready() error { return r.down(true) }

// Degraded returns nil when every source that is not Required can take calls, otherwise
// an error naming each that cannot and why: its tools fail with a tool error meanwhile,
// and chat is served (/readyz says degraded and stays 200).
func (r *Registry) Degraded() error { return r.down(false) }

// down names the sources, Required ones or the others, that cannot take calls.
func (r *Registry) down(required bool) error {
	var errs []error
	for _, ent := range r.entries() {
		if ent.cfg.Required != required {
			continue
		}
		if err := ent.src.ready(); err != nil {
			errs = append(errs, fmt.Errorf("tool source %q: %w", ent.name, err))
		}
	}
	return errors.Join(errs...)
}

// entries returns the running sources in name order.
func (r *Registry) entries() []*sourceEntry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*sourceEntry, 0, len(r.order))
	for _, name := range r.order {
		out = append(out, r.sources[name])
	}
	return out
}

// Close stops every source (stdio servers are asked to exit, HTTP sessions closed) and
// makes later calls fail with an error result, and later Updates fail. It is safe to call
// more than once.
func (r *Registry) Close() error {
	r.updateMu.Lock()
	defer r.updateMu.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	return closeEntries(r.entries())
}

// closeEntries stops the sources of entries.
func closeEntries(entries []*sourceEntry) error {
	var errs []error
	for _, ent := range entries {
		if err := ent.src.close(); err != nil {
			errs = append(errs, fmt.Errorf("closing tool source %q: %w", ent.name, err))
		}
	}
	return errors.Join(errs...)
}
