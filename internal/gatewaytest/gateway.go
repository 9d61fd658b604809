package gatewaytest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/metrics"
	"github.com/agate-gateway/agate/proxy"
	"github.com/agate-gateway/agate/telemetry"
	"github.com/agate-gateway/agate/tools"
)

// Options are what a test sets of a gateway beside its configuration. The zero value is a
// gateway without server tools or tracing that logs nothing.
type Options struct {
	// Tools starts the tool registry of the configuration's tools: and cache: (MCP servers,
	// webhooks, built-ins); it is closed in t.Cleanup.
	Tools bool
	// Tracer is passed to proxy.New; nil is tracing off.
	Tracer *telemetry.Tracer
	// Logger defaults to a logger that discards everything.
	Logger *slog.Logger
	// ShutdownTimeout bounds Shutdown in t.Cleanup; zero is five seconds.
	ShutdownTimeout time.Duration
	// Strict reports (t.Errorf) an error of Shutdown or of Serve in t.Cleanup; otherwise
	// they are ignored.
	Strict bool
	// Ledger is passed to proxy.New; nil is the one the configuration describes.
	Ledger proxy.Ledger
	// CredentialClient is proxy.Options.CredentialClient: the HTTP client of the cloud
	// backends' token fetches (one that trusts a fake TLS authority).
	CredentialClient *http.Client
	// AWSCredentials is proxy.Options.AWSCredentials: the credentials the bedrock
	// backends sign with instead of the AWS default chain (aws.Credentials in a
	// credentials.StaticCredentialsProvider), so that a test need not t.Setenv them and
	// can run in parallel; nil is the default chain, which reads the environment.
	AWSCredentials aws.CredentialsProvider
	// Clock is passed to proxy.New (the circuit breakers' time); nil is time.Now.
	Clock func() time.Time
	// Runtime are the Go and process collectors the gateway's registry gathers
	// (metrics.Options.Runtime); the zero value builds the gateway's own. A test binary
	// that starts many gateways builds one metrics.NewRuntime and passes it to each.
	Runtime metrics.Runtime
}

// Gateway is a gateway serving on a loopback port until the test ends.
type Gateway struct {
	Addr     string // host:port
	URL      string // http://host:port, without /v1
	Server   *proxy.Server
	Config   *config.Config
	Registry *prometheus.Registry // the registry its metrics are in (and /metrics gathers)
	Metrics  *metrics.Metrics
	Tools    *tools.Registry // nil without Options.Tools
	Watcher  *config.Watcher // nil unless started by StartFile
	Logger   *slog.Logger
}

// V1 is the base URL of the OpenAI and Anthropic APIs: URL + "/v1".
func (g *Gateway) V1() string { return g.URL + "/v1" }

// Parse parses a YAML configuration (no environment) and fails t, quoting the YAML, when it
// is not valid.
func Parse(t testing.TB, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	return cfg
}

// StartYAML starts a gateway for a YAML configuration.
func StartYAML(t testing.TB, yaml string, o Options) *Gateway {
	t.Helper()
	return Start(t, Parse(t, yaml), o)
}

// StartFile starts a gateway for the configuration file at path, with a config.Watcher that
// applies the file's changes (Server.Apply) until the test ends.
func StartFile(t testing.TB, path string, o Options) *Gateway {
	t.Helper()
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, cfg, o)
	g.Watcher, err = config.NewWatcher(path, nil, g.Server.Apply, g.Logger, g.Metrics.ConfigReload)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Watcher.Close() })
	g.serve(t, o)
	return g
}

// Start starts a gateway for cfg on a loopback port: proxy.New, then Serve on a listener of
// its own (cfg.Server.Listen is not used), and Shutdown when the test ends.
func Start(t testing.TB, cfg *config.Config, o Options) *Gateway {
	t.Helper()
	g := newGateway(t, cfg, o)
	g.serve(t, o)
	return g
}

// newGateway builds the server (and the tool registry) without serving it.
func newGateway(t testing.TB, cfg *config.Config, o Options) *Gateway {
	t.Helper()
	g := &Gateway{Config: cfg, Registry: prometheus.NewRegistry(), Logger: o.Logger}
	if g.Logger == nil {
		g.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	g.Metrics = metrics.NewWith(g.Registry, metrics.Options{Runtime: o.Runtime})
	if o.Tools {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		reg, err := tools.New(ctx, proxy.ToolSources(cfg.Tools), proxy.ToolCache(cfg.Cache), g.Metrics, g.Logger)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { reg.Close() })
		g.Tools = reg
	}
	opts := proxy.Options{Config: cfg, Metrics: g.Metrics, Gatherer: g.Registry, Logger: g.Logger, Tracer: o.Tracer, Ledger: o.Ledger,
		CredentialClient: o.CredentialClient, AWSCredentials: o.AWSCredentials, Clock: o.Clock}
	if g.Tools != nil { // a nil *tools.Registry in the ToolSet interface would not be nil
		opts.Tools = g.Tools
	}
	srv, err := proxy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	g.Server = srv
	return g
}

// serve listens on a loopback port and serves until the test ends.
func (g *Gateway) serve(t testing.TB, o Options) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- g.Server.Serve(ln) }()
	timeout := o.ShutdownTimeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := g.Server.Shutdown(ctx); err != nil && o.Strict {
			t.Errorf("Shutdown: %v", err)
		}
		if o.Strict {
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
	})
	g.Addr = ln.Addr().String()
	g.URL = "http://" + g.Addr
}
