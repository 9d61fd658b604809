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
	"net"
	"os"
	"os/signal"
	"reflect"
	goruntime "runtime"
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

func main() {
	reexecTuned() // sysmon.go: the runtime's system monitor ticks instead of parking
	// The gateway serves no heap profile: sampling allocations for one would cost a
	// stack walk per sample and a bucket table of about 1.4 MB.
	goruntime.MemProfileRate = 0
	if err := run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

// run is main with its inputs injected. ready, if not nil, receives the listening address
// once the server accepts connections.
func run(args, environ []string, stdout, stderr io.Writer, ready chan<- string) error {
	if len(args) > 0 && args[0] == "admin" { // admin.go: a client of the admin API
		return runAdmin(args[1:], environ, stdout, stderr)
	}
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", lookup(environ, config.EnvConfigPath, "config.yaml"), "path of the YAML configuration (env "+config.EnvConfigPath+")")
	showVersion := fs.Bool("version", false, "print the version and exit")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (pprof) of the whole run to this file at shutdown; how cmd/gateway/default.pgo is made (ARCHITECTURE.md)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		fmt.Fprintln(stdout, "agate", version)
		return nil
	}
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

	var toolSet proxy.ToolSet
	if len(cfg.Tools) > 0 {
		registry, err := tools.New(ctx, proxy.ToolSources(cfg.Tools), toolCache, m, logger, toolOpts...)
		if err != nil {
			return fmt.Errorf("tools: %w", err)
		}
		defer registry.Close()
		toolSet = registry
	}
	srv, err := proxy.New(proxy.Options{Config: cfg, Metrics: m, Gatherer: reg, Logger: logger, Tools: toolSet, Limiter: limiter, Tracer: tracer})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return err
	}
	logger.Info("agate listening", "addr", ln.Addr().String(), "version", version, "config", *path)
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
		// The server applies log.unsafe_transport_errors and log.upstream_error_messages
		// with the rest of the runtime (proxy.Server.Apply).
		if err := srv.Apply(c); err != nil {
			return err
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

func lookup(environ []string, name, def string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if len(environ[i]) > len(name) && environ[i][:len(name)+1] == name+"=" {
			return environ[i][len(name)+1:]
		}
	}
	return def
}

// needRestart names the sections of next that differ from running and that a reload does
// not apply.
func needRestart(running, next *config.Config) []string {
	var names []string
	for _, s := range []struct {
		name    string
		changed bool
	}{
		{"server", running.Server != next.Server},
		{"log.format", running.Log.Format != next.Log.Format},
		{"metrics", running.Metrics != next.Metrics},
		{"tools", !reflect.DeepEqual(running.Tools, next.Tools)},
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
