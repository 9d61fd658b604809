package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
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
// The set of MCP tools changes when a server announces a new list; Resolve and Call always
// see the latest one.
type Registry struct {
	logger  *slog.Logger
	obs     Observer
	cache   Cache
	flights flightGroup
	sources map[string]source        // immutable after New
	configs map[string]SourceOptions // immutable after New
	order   []string                 // source names, sorted

	// cacheByCaller keeps cache entries and shared executions apart per caller (cache
	// scope key); immutable after New.
	cacheByCaller bool

	mu       sync.RWMutex
	byName   map[string]*tool   // model-facing name -> tool
	bySource map[string][]*tool // source -> its tools, sorted by Tool
	closed   bool
}

// tool is one registered tool: its definition, compiled schema and executor.
type tool struct {
	def    Definition
	schema *jsonschema.Schema
	src    source
	// mask passes results through redact.Mask (mask_results, default true).
	mask bool
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
}

// emptyObjectSchema is the parameters schema of a tool that declares none.
const emptyObjectSchema = `{"type":"object","properties":{}}`

// New builds a Registry from the configured sources and connects every one of them, within
// ctx. It fails if a source cannot be started or a definition is bad: an invalid source
// name, a schema that does not compile, or two tools with the same model-facing name. Tools
// published later by an MCP server's list-changed notification are validated the same way,
// but a bad one is logged and left out instead. cache sizes the built-in [LRUCache]
// unless [WithCache] is given, and says whether the callers named by [WithCaller] share
// cached results. A nil obs or logger is allowed. When New fails it closes whatever it had started; otherwise the caller must
// Close the Registry.
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
		sources:  make(map[string]source, len(sources)),
		configs:  make(map[string]SourceOptions, len(sources)),
		byName:   make(map[string]*tool),
		bySource: make(map[string][]*tool),
	}
	r.cacheByCaller = !cache.Shared
	if r.cache == nil {
		r.cache = NewLRUCache(cache.MaxEntries, cache.TTL, obs.CacheEviction)
	}
	for name, cfg := range sources {
		r.order = append(r.order, name)
		r.configs[name] = cfg
	}
	sort.Strings(r.order)

	for _, name := range r.order {
		cfg := sources[name]
		if err := validateSourceName(name); err != nil {
			return nil, errors.Join(err, r.Close())
		}
		src, err := r.newSource(name, cfg, o)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("tool source %q: %w", name, err), r.Close())
		}
		r.sources[name] = src
	}
	for _, name := range r.order {
		specs, err := r.sources[name].start(ctx)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("starting tool source %q: %w", name, err), r.Close())
		}
		if err := r.setTools(name, specs, rejectBadTools); err != nil {
			return nil, errors.Join(err, r.Close())
		}
		warnUnusedOverrides(logger, name, sources[name], specs)
	}
	return r, nil
}

func (r *Registry) newSource(name string, cfg SourceOptions, o options) (source, error) {
	publish := func(specs []toolSpec) { _ = r.setTools(name, specs, skipBadTools) }
	switch cfg.Type {
	case SourceMCP:
		return newMCPSource(name, cfg, r.logger.With("tool_source", name), publish)
	case SourceHTTP:
		return newWebhookSource(name, cfg)
	case SourceBuiltin:
		return newBuiltinSource(name, cfg, o.now)
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

// updatePolicy says what setTools does with a bad tool.
type updatePolicy int

const (
	rejectBadTools updatePolicy = iota // fail the whole update (at start)
	skipBadTools                       // log it and install the rest (list changes later)
)

// setTools validates specs and replaces the tools of source with them, following policy.
func (r *Registry) setTools(sourceName string, specs []toolSpec, policy updatePolicy) error {
	src := r.sources[sourceName]
	cfg := r.configs[sourceName]
	built := make([]*tool, 0, len(specs))
	var errs []error
	seen := make(map[string]bool, len(specs))
	for _, spec := range specs {
		t, err := buildTool(sourceName, spec, cfg, src)
		if err == nil && seen[t.def.Name] {
			err = fmt.Errorf("tool %q of source %q: model-facing name %q is used twice", spec.Tool, sourceName, t.def.Name)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		seen[t.def.Name] = true
		built = append(built, t)
	}
	slices.SortFunc(built, func(a, b *tool) int { return strings.Compare(a.def.Tool, b.def.Tool) })

	r.mu.Lock()
	defer r.mu.Unlock()
	kept := built[:0]
	for _, t := range built {
		if other, ok := r.byName[t.def.Name]; ok && other.def.Source != sourceName {
			errs = append(errs, fmt.Errorf("tool %q of source %q: model-facing name %q is already used by tool %q of source %q",
				t.def.Tool, sourceName, t.def.Name, other.def.Tool, other.def.Source))
			continue
		}
		kept = append(kept, t)
	}
	if err := errors.Join(errs...); err != nil {
		if policy == rejectBadTools {
			return err
		}
		r.logger.Error("tool list update: left out bad tools", "tool_source", sourceName, "error", err)
	}
	for _, old := range r.bySource[sourceName] {
		delete(r.byName, old.def.Name)
	}
	for _, t := range kept {
		r.byName[t.def.Name] = t
	}
	r.bySource[sourceName] = kept
	return nil
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
	return &tool{def: d, schema: sch, src: src, mask: cfg.MaskResults == nil || *cfg.MaskResults}, nil
}

// Resolve returns the definitions named by a key's tool list: a source name selects all of
// its current tools (sorted by tool name), "source/tool" one tool by its own name. The result
// keeps the order of names and holds each tool once. A name matching nothing is an error
// wrapping ErrUnknownTool. A source whose server is down still resolves, to the tools it had.
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
		if _, ok := r.sources[srcName]; !ok {
			errs = append(errs, fmt.Errorf("resolving %q: %w source %q", n, ErrUnknownTool, srcName))
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

// Ready returns nil when every source can take calls, otherwise an error naming each source
// that cannot and why (for /readyz).
func (r *Registry) Ready() error {
	var errs []error
	for _, name := range r.order {
		src, ok := r.sources[name]
		if !ok {
			continue
		}
		if err := src.ready(); err != nil {
			errs = append(errs, fmt.Errorf("tool source %q: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Close stops every source (stdio servers are asked to exit, HTTP sessions closed) and
// makes later calls fail with an error result. It is safe to call more than once.
func (r *Registry) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	var errs []error
	for _, name := range r.order {
		if src, ok := r.sources[name]; ok {
			if err := src.close(); err != nil {
				errs = append(errs, fmt.Errorf("closing tool source %q: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}
