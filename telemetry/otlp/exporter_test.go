package otlp_test

import (
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	_ "google.golang.org/grpc/encoding/gzip" // the collector side of grpc-encoding: gzip
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/agate-gateway/agate/telemetry/otlp"
)

// fastRetry keeps the tests' backoff in milliseconds.
var fastRetry = otlp.Retry{Initial: time.Millisecond, Max: 2 * time.Millisecond, MaxElapsed: 200 * time.Millisecond}

// answer is what a scripted collector answers to one export.
type answer struct {
	status      int // HTTP status (0: 200)
	code        codes.Code
	message     string // google.rpc.Status message (HTTP) or gRPC status message
	retryAfter  string
	rejected    int64 // partial success
	rejectedWhy string
}

// collector is a scripted OTLP collector: the nth export gets script[n] (the last one
// repeats) and is recorded.
type collector struct {
	collectortrace.UnimplementedTraceServiceServer
	script []answer

	mu        sync.Mutex
	requests  []*collectortrace.ExportTraceServiceRequest
	headers   []map[string]string // the headers (gRPC: metadata) of each export, lower-cased
	encodings []string            // gRPC: each call's grpc-encoding
}

func (c *collector) next(req *collectortrace.ExportTraceServiceRequest, headers map[string]string) answer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, req)
	c.headers = append(c.headers, headers)
	return c.script[min(len(c.requests), len(c.script))-1]
}

func (c *collector) exports() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.requests)
}

func (c *collector) Export(ctx context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	h := map[string]string{}
	for k, v := range md {
		h[k] = strings.Join(v, ",")
	}
	a := c.next(req, h)
	if a.code != codes.OK {
		return nil, grpcstatus.Error(a.code, a.message)
	}
	return response(a), nil
}

func response(a answer) *collectortrace.ExportTraceServiceResponse {
	r := &collectortrace.ExportTraceServiceResponse{}
	if a.rejected > 0 || a.rejectedWhy != "" {
		r.PartialSuccess = &collectortrace.ExportTracePartialSuccess{RejectedSpans: a.rejected, ErrorMessage: a.rejectedWhy}
	}
	return r
}

// ServeHTTP is the OTLP/HTTP collector.
func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = zr
	}
	b, _ := io.ReadAll(body)
	var req collectortrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(b, &req) != nil {
		http.Error(w, "not an OTLP export", 400)
		return
	}
	h := map[string]string{}
	for k, v := range r.Header {
		h[strings.ToLower(k)] = strings.Join(v, ",")
	}
	a := c.next(&req, h)
	w.Header().Set("Content-Type", "application/x-protobuf")
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	if a.status != 0 && a.status != 200 {
		st, _ := proto.Marshal(&status.Status{Code: 3, Message: a.message})
		w.WriteHeader(a.status)
		w.Write(st)
		return
	}
	out, _ := proto.Marshal(response(a))
	w.Write(out)
}

// serveGRPC starts c as a gRPC collector (TLS when cert is set) and returns its address.
func serveGRPC(t *testing.T, c *collector, cert *tls.Certificate) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if cert != nil {
		opts = append(opts, grpc.Creds(credentials.NewServerTLSFromCert(cert)))
	}
	opts = append(opts, grpc.StatsHandler(compressionSeen{c}))
	srv := grpc.NewServer(opts...)
	collectortrace.RegisterTraceServiceServer(srv, c)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// compressionSeen records a gRPC request's grpc-encoding, which the server's metadata
// leaves out, in the collector's headers of the export.
type compressionSeen struct{ c *collector }

func (h compressionSeen) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (h compressionSeen) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (h compressionSeen) HandleConn(context.Context, stats.ConnStats) {}
func (h compressionSeen) HandleRPC(_ context.Context, s stats.RPCStats) {
	if in, ok := s.(*stats.InHeader); ok {
		h.c.mu.Lock()
		h.c.encodings = append(h.c.encodings, in.Compression)
		h.c.mu.Unlock()
	}
}

// selfSigned makes a certificate for 127.0.0.1 and writes it as PEM to a file.
func selfSigned(t *testing.T) (tls.Certificate, string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "collector"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, path
}

// exporter builds an exporter from env through FromEnv, with fastRetry.
func exporter(t *testing.T, env map[string]string) *otlp.Exporter {
	cfg, err := otlp.FromEnv(func(k string) string { return env[k] }, os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Retry = fastRetry
	e := otlp.New(cfg)
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	return e
}

// TestExporter: exports over each protocol, plain and TLS, with headers and compression;
// retryable refusals tried again, others not; a partial success reported.
func TestExporter(t *testing.T) {
	cert, caFile := selfSigned(t)
	spans := specimenSpans(t)
	wantRequest := unmarshal(t, otlp.AppendRequest(nil, spans))
	tests := []struct {
		name     string
		protocol string // "http", "https", "grpc", "grpcs"
		env      map[string]string
		script   []answer
		wantErr  string // "" for success
		exports  int
	}{
		{name: "http", protocol: "http", script: []answer{{}}, exports: 1},
		{name: "http gzip and headers", protocol: "http", env: map[string]string{
			"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=k1"}, script: []answer{{}}, exports: 1},
		{name: "https with the collector's CA", protocol: "https", script: []answer{{}}, exports: 1},
		{name: "http retries 429, 502, 503, 504", protocol: "http",
			script: []answer{{status: 429}, {status: 502}, {status: 503, retryAfter: "0"}, {status: 504}, {}}, exports: 5},
		{name: "http 400 is not retried", protocol: "http", script: []answer{{status: 400, message: "bad spans"}},
			wantErr: "otlp http export: status 400: bad spans", exports: 1},
		{name: "http Retry-After beyond the budget", protocol: "http", script: []answer{{status: 503, retryAfter: "3600"}},
			wantErr: "otlp http export: status 503", exports: 1},
		{name: "http retries end after MaxElapsed", protocol: "http", script: []answer{{status: 503, message: "overloaded"}},
			wantErr: "otlp http export: status 503: overloaded"},
		{name: "http partial success", protocol: "http", script: []answer{{rejected: 2, rejectedWhy: "too old"}},
			wantErr: "otlp http export: the collector rejected 2 spans: too old", exports: 1},
		{name: "grpc cleartext", protocol: "grpc", script: []answer{{}}, exports: 1},
		{name: "grpc gzip and headers", protocol: "grpc", env: map[string]string{
			"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "api-key=k1"}, script: []answer{{}}, exports: 1},
		{name: "grpc TLS with the collector's CA", protocol: "grpcs", script: []answer{{}}, exports: 1},
		{name: "grpc UNAVAILABLE is retried", protocol: "grpc",
			script: []answer{{code: codes.Unavailable}, {code: codes.Aborted}, {}}, exports: 3},
		{name: "grpc INVALID_ARGUMENT is not", protocol: "grpc", script: []answer{{code: codes.InvalidArgument, message: "bad span: id"}},
			wantErr: "otlp grpc export: INVALID_ARGUMENT: bad span: id", exports: 1},
		{name: "grpc partial success", protocol: "grpc", script: []answer{{rejected: 1, rejectedWhy: "limit"}},
			wantErr: "otlp grpc export: the collector rejected 1 spans: limit", exports: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &collector{script: tt.script}
			env := map[string]string{}
			for k, v := range tt.env {
				env[k] = v
			}
			switch tt.protocol {
			case "http":
				srv := httptest.NewServer(c)
				t.Cleanup(srv.Close)
				env["OTEL_EXPORTER_OTLP_ENDPOINT"] = srv.URL
			case "https":
				srv := httptest.NewUnstartedServer(c)
				srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
				srv.StartTLS()
				t.Cleanup(srv.Close)
				env["OTEL_EXPORTER_OTLP_ENDPOINT"] = srv.URL
				env["OTEL_EXPORTER_OTLP_CERTIFICATE"] = caFile
			case "grpc":
				env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "grpc"
				env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://" + serveGRPC(t, c, nil)
			case "grpcs":
				env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "grpc"
				env["OTEL_EXPORTER_OTLP_ENDPOINT"] = serveGRPC(t, c, &cert) // host:port: TLS
				env["OTEL_EXPORTER_OTLP_CERTIFICATE"] = caFile
			}
			err := exporter(t, env).ExportSpans(context.Background(), spans)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("export: %v", err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("export error %v, want %q", err, tt.wantErr)
			}
			if tt.exports > 0 && c.exports() != tt.exports {
				t.Errorf("%d exports, want %d", c.exports(), tt.exports)
			}
			if tt.exports == 0 && c.exports() < 2 {
				t.Errorf("%d exports, want retries", c.exports())
			}
			for i, req := range c.requests {
				if i > 0 && i < len(c.requests)-1 {
					continue // the first and the last attempt say it for all
				}
				// proto.Equal is the comparison protocmp's diff makes (fields by content, in
				// order) without its reflection: the diff is computed only to say what differs
				// (under -race it was half the package's CPU, #54).
				if !proto.Equal(wantRequest, req) {
					t.Errorf("export %d (-want +got):\n%s", i, cmp.Diff(wantRequest, req, protocmpTransform))
				}
				if want, ok := env["OTEL_EXPORTER_OTLP_HEADERS"]; ok && c.headers[i]["api-key"] != strings.TrimPrefix(want, "api-key=") {
					t.Errorf("export %d: api-key header %q", i, c.headers[i]["api-key"])
				}
				if want, ok := env["OTEL_EXPORTER_OTLP_TRACES_HEADERS"]; ok && c.headers[i]["api-key"] != strings.TrimPrefix(want, "api-key=") {
					t.Errorf("export %d: api-key metadata %q", i, c.headers[i]["api-key"])
				}
				if env["OTEL_EXPORTER_OTLP_COMPRESSION"] == "gzip" {
					enc := c.headers[i]["content-encoding"]
					if strings.HasPrefix(tt.protocol, "grpc") {
						enc = c.encodings[i]
					}
					if enc != "gzip" {
						t.Errorf("export %d: encoding %q, want gzip", i, enc)
					}
				}
			}
		})
	}
}

// TestExporter_Stops: a cancelled context ends the retries, a stopped exporter refuses,
// and an unreachable collector is a transport error without the endpoint's URL.
func TestExporter_Stops(t *testing.T) {
	spans := specimenSpans(t)[:1]
	c := &collector{script: []answer{{status: 503}}}
	srv := httptest.NewServer(c)
	defer srv.Close()
	cfg, err := otlp.FromEnv(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv.URL + "/v1/traces?token=secret"}[k]
	}, os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Retry = otlp.Retry{Initial: time.Hour, Max: time.Hour, MaxElapsed: 2 * time.Hour}
	e := otlp.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for c.exports() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if err := e.ExportSpans(ctx, spans); !errors.Is(err, context.Canceled) {
		t.Errorf("export with the context cancelled in its backoff: %v, want context.Canceled", err)
	}

	srv.Close() // nothing listens now
	cfg.Retry = otlp.Retry{Initial: time.Millisecond, Max: time.Millisecond, MaxElapsed: 10 * time.Millisecond}
	err = otlp.New(cfg).ExportSpans(context.Background(), spans)
	if err == nil || strings.Contains(err.Error(), "secret") || !strings.HasPrefix(err.Error(), "otlp http export: post: ") {
		t.Errorf("export to nothing: %v, want a transport error without the URL", err)
	}

	e.Shutdown(context.Background())
	if err := e.ExportSpans(context.Background(), spans); err == nil || err.Error() != "otlp: the exporter is shut down" {
		t.Errorf("export after Shutdown: %v", err)
	}
	if err := e.ExportSpans(context.Background(), nil); err == nil {
		t.Error("empty export after Shutdown: no error")
	}
}
