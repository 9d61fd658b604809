package tools

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// errRegistryClosed is returned by Update after Close.
var errRegistryClosed = errors.New("tool registry closed")

// Update replaces the Registry's sources with sources (a configuration reload): it starts
// the sources that are new, stops those that are gone, restarts those whose options changed
// (reflect.DeepEqual), and leaves the others alone, their connections, processes and tool
// lists untouched. New and changed sources are started within ctx before anything changes;
// if one of them cannot be started (a bad name or type, a Required source that does not
// come up, a tool whose schema does not compile, a model-facing name another tool uses),
// Update stops what it started and returns an error naming the source, and the Registry
// keeps running as it was. An MCP server that cannot be reached is not such a failure
// unless its source is Required: see [New]. Calls of a removed or restarted source's tools
// that are under way when Update returns end with an error result; a tool list such a
// source announces afterwards is ignored. Update and Close may be called concurrently with
// everything else, and Updates run one at a time.
func (r *Registry) Update(ctx context.Context, sources map[string]SourceOptions) error {
	r.updateMu.Lock()
	defer r.updateMu.Unlock()
	r.mu.RLock()
	closed, running := r.closed, maps.Clone(r.sources)
	r.mu.RUnlock()
	if closed {
		return errRegistryClosed
	}

	var started []startedSource
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		cfg := sources[name]
		if old, ok := running[name]; ok && reflect.DeepEqual(old.cfg, cfg) {
			continue
		}
		st, err := r.startSource(ctx, name, cfg)
		if err != nil {
			return errors.Join(err, r.retire(started))
		}
		started = append(started, st)
	}
	var stopped []*sourceEntry
	for name, old := range running {
		if _, ok := sources[name]; !ok {
			stopped = append(stopped, old)
		}
	}
	replaced, err := r.install(started, stopped)
	if err != nil {
		return errors.Join(err, r.retire(started))
	}
	stopped = append(stopped, replaced...)
	slices.SortFunc(stopped, func(a, b *sourceEntry) int { return strings.Compare(a.name, b.name) })
	for _, st := range started {
		if st.connected {
			r.logger.Info("tool source started", "tool_source", st.ent.name, "tools", len(st.tools))
		}
		r.applyPending(st.ent)
	}
	for _, old := range stopped {
		r.logger.Info("tool source stopped", "tool_source", old.name)
	}
	if err := closeEntries(stopped); err != nil {
		r.logger.Warn("stopping tool sources", "error", err)
	}
	return nil
}

// startedSource is a source Update started and has not installed yet.
type startedSource struct {
	ent       *sourceEntry
	tools     []*tool
	connected bool // gave its tool list (an MCP server that did not come up has none yet)
}

// startSource builds and starts one source. An MCP server that does not come up is, unless
// the source is Required, logged and retried in the background: the source is returned
// without tools.
func (r *Registry) startSource(ctx context.Context, name string, cfg SourceOptions) (startedSource, error) {
	if err := validateSourceName(name); err != nil {
		return startedSource{}, err
	}
	ent := &sourceEntry{name: name, cfg: cfg}
	src, err := r.newSource(ent)
	if err != nil {
		return startedSource{}, fmt.Errorf("tool source %q: %w", name, err)
	}
	ent.src = src
	specs, err := src.start(ctx)
	if err != nil {
		mcp, ok := src.(*mcpSource)
		if !ok || cfg.Required {
			return startedSource{}, errors.Join(fmt.Errorf("starting tool source %q: %w", name, err), src.close())
		}
		r.logger.Error("tool source did not start; it is retried in the background, its tools are offered once it is up (tools.<name>.required: true makes this fatal)",
			"tool_source", name, "error", err)
		mcp.retryInBackground(err)
		return startedSource{ent: ent}, nil
	}
	tools, err := buildTools(ent, specs)
	if err != nil {
		return startedSource{}, errors.Join(err, src.close())
	}
	warnUnusedOverrides(r.logger, name, cfg, specs)
	return startedSource{ent: ent, tools: tools, connected: true}, nil
}

// install makes started the running entries of their names and removes stopped, in one
// step under the lock, unless a started tool's model-facing name is taken by a tool that
// stays. It returns the entries started replaced.
func (r *Registry) install(started []startedSource, stopped []*sourceEntry) ([]*sourceEntry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errRegistryClosed
	}
	byName := maps.Clone(r.byName)
	leaving := slices.Clone(stopped)
	for _, st := range started {
		if old, ok := r.sources[st.ent.name]; ok {
			leaving = append(leaving, old)
		}
	}
	for _, old := range leaving {
		for _, t := range r.bySource[old.name] {
			delete(byName, t.def.Name)
		}
	}
	var errs []error
	for _, st := range started {
		for _, t := range st.tools {
			if other, ok := byName[t.def.Name]; ok {
				errs = append(errs, fmt.Errorf("tool %q of source %q: model-facing name %q is already used by tool %q of source %q",
					t.def.Tool, st.ent.name, t.def.Name, other.def.Tool, other.def.Source))
				continue
			}
			byName[t.def.Name] = t
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	var replaced []*sourceEntry
	for _, old := range stopped {
		old.retired = true
		delete(r.sources, old.name)
		delete(r.bySource, old.name)
	}
	for _, st := range started {
		if old, ok := r.sources[st.ent.name]; ok {
			old.retired = true
			replaced = append(replaced, old)
		}
		st.ent.installed, st.ent.connected = true, st.connected
		r.sources[st.ent.name] = st.ent
		r.bySource[st.ent.name] = st.tools
	}
	r.byName = byName
	r.order = slices.Sorted(maps.Keys(r.sources))
	return replaced, nil
}

// retire stops sources a failed Update started.
func (r *Registry) retire(started []startedSource) error {
	r.mu.Lock()
	entries := make([]*sourceEntry, 0, len(started))
	for _, st := range started {
		st.ent.retired = true
		entries = append(entries, st.ent)
	}
	r.mu.Unlock()
	return closeEntries(entries)
}

// applyPending installs a tool list ent published while Update was starting other sources.
func (r *Registry) applyPending(ent *sourceEntry) {
	r.mu.Lock()
	specs, ok := ent.pending, ent.hasPending
	ent.pending, ent.hasPending = nil, false
	r.mu.Unlock()
	if ok {
		r.setTools(ent, specs)
	}
}
