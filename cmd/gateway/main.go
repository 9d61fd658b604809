// Command gateway runs Agate, the OpenAI-compatible agentic proxy gateway.
//
//	gateway -config config.example.yaml
//
// The config path may also come from GATEWAY_CONFIG. SIGHUP or an edit of the file reloads
// the configuration; SIGTERM or SIGINT shuts down gracefully.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/signal"
	"reflect"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/internal/asynclog"
	"github.com/agate-gateway/agate/internal/logjson"
	"github.com/agate-gateway/agate/limits"
	"github.com/agate-gateway/agate/metrics"
	"github.com/agate-gateway/agate/proxy"
	"github.com/agate-gateway/agate/telemetry"
	"github.com/agate-gateway/agate/tools"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// commit is set at build time with -ldflags "-X main.commit=<git revision>" (the release
// script does); without it -version reads the revision the go command stamped, if any.
var commit = ""

func main() {
	// sysmon.go: the runtime tuning keeps the runtime's system monitor ticking instead of
	// parking. With awake (the default) a goroutine keeps one processor of its own; with
	// schedtrace (opt-in) the process re-executes itself first thing. A bad value is run's
	// error.
	var awake awakeStart
	if args := os.Args[1:]; len(args) == 0 || args[0] != "admin" {
		fs, flags := gatewayFlags(os.Environ(), io.Discard)
		if fs.Parse(args) == nil {
			if tuning, err := runtimeTuning(*flags.runtimeTuning, os.Environ()); err == nil {
				reexecTuned(tuning)
				awake.keeper, awake.err = keepAwake(tuning, os.Environ())
			}
		}
	}
	// The gateway serves no heap profile: sampling allocations for one would cost a
	// stack walk per sample and a bucket table of about 1.4 MB.
	goruntime.MemProfileRate = 0
	if err := runTuned(os.Args[1:], os.Environ(), os.Stdout, os.Stderr, nil, awake); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

// versionLine is what -version prints: "agate <version> (commit <rev>[, modified], <go
// version>)", the commit and Go version read from the build information the go command
// stamps into the binary (absent in a test binary).
func versionLine() string {
	line := "agate " + version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return line
	}
	rev, modified := commit, ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			if rev == "" {
				rev = s.Value
			}
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	return line + " (commit " + rev + modified + ", " + info.GoVersion + ")"
}

// commandFlags are the values of the command line's flags.
type commandFlags struct {
	config, runtimeTuning, startPages, cpuProfile *string
	version                                       *bool
}

// gatewayFlags returns the command line's flag set, writing its errors and usage to out,
// and its values. main parses the arguments with it before run does, to read
// -runtime-tuning and re-execute the process first thing.
func gatewayFlags(environ []string, out io.Writer) (*flag.FlagSet, commandFlags) {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(out)
	return fs, commandFlags{
		config:        fs.String("config", lookup(environ, config.EnvConfigPath, "config.yaml"), "path of the YAML configuration (env "+config.EnvConfigPath+")"),
		version:       fs.Bool("version", false, "print the version and exit"),
		runtimeTuning: fs.String("runtime-tuning", "", "keep the Go runtime's system monitor from parking when idle (less CPU at moderate load): awake (default: one more processor, kept by a sleeping goroutine while the gateway is idle; GOMAXPROCS is fixed at start), schedtrace (re-exec with GODEBUG=schedtrace=2147483647; the runtime prints a scheduler line on stderr when the host's uptime passes 24.8 days) or off (the runtime's defaults) (env "+envRuntimeTuning+"; PERFORMANCE.md)"),
		startPages:    fs.String("start-pages", "", "release (default): once the server listens, drop the pages of the binary the start mapped (its packages' init functions; about 20 MB of RSS) from the process, the kernel keeping them cached, and after a burst of requests, once idle, return the heap's free pages and drop them again; keep: leave them mapped, give nothing back when idle (env "+envStartPages+"; PERFORMANCE.md)"),
		cpuProfile:    fs.String("cpuprofile", "", "write a CPU profile (pprof) of the whole run to this file at shutdown; how cmd/gateway/gateway.pgo is made (ARCHITECTURE.md)"),
	}
}

// run is main with its inputs injected. ready, if not nil, receives the listening address
// once the server accepts connections. It starts no keeper of tuningAwake (the process's
// GOMAXPROCS is main's to change): the start line then says "off (awake not started)".
func run(args, environ []string, stdout, stderr io.Writer, ready chan<- string) error {
	return runTuned(args, environ, stdout, stderr, ready, awakeStart{})
}

// awakeStart is what main's start of tuningAwake's keeper gave: the keeper, nil if none,
// and the error that stopped it.
type awakeStart struct {
	keeper *awakeKeeper
	err    error
}

// runTuned is run with the keeper main started.
func runTuned(args, environ []string, stdout, stderr io.Writer, ready chan<- string, awake awakeStart) error {
	if len(args) > 0 && args[0] == "admin" { // admin.go: a client of the admin API
		return runAdmin(args[1:], environ, stdout, stderr)
	}
	fs, flags := gatewayFlags(environ, stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *flags.version {
		fmt.Fprintln(stdout, versionLine())
		return nil
	}
	tuning, err := runtimeTuning(*flags.runtimeTuning, environ)
	if err != nil {
		return err
	}
	pages, err := startPages(*flags.startPages, environ)
	if err != nil {
		return err
	}
	path, cpuProfile := flags.config, flags.cpuProfile
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	cfg, err := config.Load(*path, environ)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w\n(no configuration file at %q: name one with -config <path> or %s; config.example.yaml in the repository runs offline with the mock backend)", err, *path, config.EnvConfigPath)
	}
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	// Log lines are written in batches, so that a request's log line costs it no system
	// call. Closed last (deferred first), after every other closer had its say.
	logOut := asynclog.New(stderr, asynclog.Options{OnDrop: m.LogLinesDropped.Inc})
	defer logOut.Close()
	// log.level applies on reload through level; log.format needs a restart.
	level := new(slog.LevelVar)
	logger := newLogger(logOut, cfg.Log, level)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// The limiter and the second level of the tool cache share one Redis client (state: redis).
	stateErrs := &limits.ErrorLog{Logger: logger, Count: m.StateError}
	limiter, err := limits.Open(proxy.LimiterOptions(cfg.State), stateErrs)
	if err != nil {
		return err
	}
	defer limiter.Close()
	var toolOpts []tools.Option
	toolCache := proxy.ToolCache(cfg.Cache)
	if c := limits.SharedToolCache(limiter, toolCache, m.CacheEviction, stateErrs); c != nil {
		toolOpts = append(toolOpts, tools.WithCache(c))
	}

	// Traces (telemetry.traces): the SDK reads OTEL_* from the process environment.
	tracer, err := telemetry.New(ctx, proxy.TelemetryOptions(cfg.Telemetry))
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tracer.Shutdown(sctx); err != nil {
			logger.Warn("flushing the last spans", "error", err)
		}
	}()

	// The registry exists even without tool sources, so that a reload can add the first.
	// An MCP server that cannot be reached does not stop the start unless its source is
	// required: it is retried in the background (tools.New).
	registry, err := tools.New(ctx, proxy.ToolSources(cfg.Tools), toolCache, m, logger, toolOpts...)
	if err != nil {
		return fmt.Errorf("tools: %w", err)
	}
	defer registry.Close()
	srv, err := proxy.New(proxy.Options{Config: cfg, Metrics: m, Gatherer: reg, Logger: logger, Tools: registry, Limiter: limiter, Tracer: tracer})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return err
	}
	if awake.err != nil {
		logger.Warn("runtime tuning: the runtime's defaults instead", "error", awake.err)
	}
	var released int64
	if pages == startPagesRelease {
		if released, err = releaseStartPages(); err != nil {
			logger.Warn("start pages: left mapped", "error", err)
		}
	}
	if pages == startPagesRelease { // after a burst, its memory back (idlerelease.go)
		go newIdleRelease(m.Inflight).run(ctx)
	}
	logger.Info("agate listening", "addr", ln.Addr().String(), "version", version, "config", *path,
		"runtime_tuning", tuningInForce(tuning, environ, awake.keeper), "gomaxprocs", goruntime.GOMAXPROCS(0),
		"start_pages", pages, "start_pages_released_bytes", released)
	metricsErr := make(chan error, 1)
	if cfg.Metrics.Listen != "" {
		mln, err := net.Listen("tcp", cfg.Metrics.Listen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("metrics.listen: %w", err)
		}
		logger.Info("metrics listening", "addr", mln.Addr().String())
		go func() { metricsErr <- srv.ServeMetrics(mln) }()
	}
	if cfg.Admin.Listen != "" {
		aln, err := net.Listen("tcp", cfg.Admin.Listen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("admin.listen: %w", err)
		}
		logger.Info("admin API listening", "addr", aln.Addr().String())
		go func() { _ = srv.ServeAdmin(aln) }() // ends with Shutdown
	}

	running := cfg
	watcher, err := config.NewWatcher(*path, environ, func(c *config.Config) error {
		// Tool sources first, so that the keys of c resolve against c's sources; removed
		// sources stay until the server has keys that no longer name them. If the server
		// refuses c, the previous sources come back.
		toolsChanged := !reflect.DeepEqual(running.Tools, c.Tools)
		staged := c.Tools
		if toolsChanged {
			staged = withRemoved(c.Tools, running.Tools)
			err := updateTools(ctx, registry, staged)
			if err != nil && len(staged) != len(c.Tools) { // a removed source's tool name clashes
				staged = c.Tools
				err = updateTools(ctx, registry, staged)
			}
			if err != nil {
				return fmt.Errorf("tools: %w", err)
			}
		}
		// The server applies log.unsafe_transport_errors and log.upstream_error_messages
		// with the rest of the runtime (proxy.Server.Apply).
		if err := srv.Apply(c); err != nil {
			if toolsChanged {
				if rerr := updateTools(ctx, registry, running.Tools); rerr != nil {
					logger.Error("config reload: restoring the previous tool sources", "error", rerr)
				}
			}
			return err
		}
		if len(staged) != len(c.Tools) {
			if err := updateTools(ctx, registry, c.Tools); err != nil { // stops the removed sources
				logger.Error("config reload: stopping removed tool sources", "error", err)
			}
		}
		if c.Log.Level != running.Log.Level {
			level.Set(logLevel(c.Log.Level))
			logger.Info("config reload: log level changed", "from", running.Log.Level, "to", c.Log.Level)
		}
		if restart := needRestart(running, c); len(restart) > 0 {
			logger.Warn("config reload: these changes take effect after a restart", "sections", restart)
		}
		running = c
		return nil
	}, logger, m.ConfigReload)
	if err != nil {
		return err
	}
	defer watcher.Close()
	go watcher.Run(ctx)

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			_ = watcher.Reload()
		}
	}()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	if ready != nil {
		ready <- ln.Addr().String()
	}
	select {
	case err := <-serveErr:
		return err
	case err := <-metricsErr:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down", "deadline", cfg.Server.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	logger.Info("stopped")
	return nil
}

// toolStartTimeout bounds starting the new and changed tool sources of a reload (npx may
// download an MCP server first). A server not up by then is retried in the background,
// unless its source is required.
const toolStartTimeout = 60 * time.Second

// updateTools makes the registry's sources those of the tools section.
func updateTools(ctx context.Context, registry *tools.Registry, sources map[string]config.ToolSource) error {
	ctx, cancel := context.WithTimeout(ctx, toolStartTimeout)
	defer cancel()
	return registry.Update(ctx, proxy.ToolSources(sources))
}

// withRemoved returns next plus the sources of running that next removes.
func withRemoved(next, running map[string]config.ToolSource) map[string]config.ToolSource {
	out := maps.Clone(next)
	if out == nil {
		out = make(map[string]config.ToolSource, len(running))
	}
	for name, ts := range running {
		if _, ok := out[name]; !ok {
			out[name] = ts
		}
	}
	return out
}

func lookup(environ []string, name, def string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if len(environ[i]) > len(name) && environ[i][:len(name)+1] == name+"=" {
			return environ[i][len(name)+1:]
		}
	}
	return def
}

// needRestart names the sections of next that differ from running and that a reload does
// not apply (tools and the rest of the sections are applied).
func needRestart(running, next *config.Config) []string {
	var names []string
	for _, s := range []struct {
		name    string
		changed bool
	}{
		{"server", running.Server != next.Server},
		{"log.format", running.Log.Format != next.Log.Format},
		{"metrics", running.Metrics != next.Metrics},
		{"cache", !reflect.DeepEqual(running.Cache, next.Cache)},
		{"state", running.State != next.State},
		{"responses", running.Responses != next.Responses},
		{"telemetry", running.Telemetry != next.Telemetry},
	} {
		if s.changed {
			names = append(names, s.name)
		}
	}
	return names
}

// logLevel is the slog level of a validated log.level.
func logLevel(name string) slog.Level {
	var l slog.Level
	_ = l.UnmarshalText([]byte(name))
	return l
}

// newLogger builds the gateway's logger in c.Format, at level, which it sets to c.Level
// (a reload changes it there).
func newLogger(w io.Writer, c config.Log, level *slog.LevelVar) *slog.Logger {
	level.Set(logLevel(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	// logjson writes the stock JSON handler's bytes; the per-request access line costs
	// about half as much through it.
	return slog.New(logjson.New(w, opts))
}
