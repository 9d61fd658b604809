package otlp

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// Protocol is an OTLP transport.
type Protocol string

const (
	// HTTPProtobuf is OTLP/HTTP: a POST of the protobuf request to the traces URL.
	HTTPProtobuf Protocol = "http/protobuf"
	// GRPC is OTLP/gRPC: the unary TraceService/Export call over HTTP/2 (cleartext
	// HTTP/2 for an http:// endpoint).
	GRPC Protocol = "grpc"
)

// exportMethod is the path of OTLP/gRPC's one call.
const exportMethod = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// Config says where an Exporter sends and how. FromEnv fills it from the standard
// variables; every field must be set (New does not default them).
type Config struct {
	Protocol Protocol
	// URL is where an export goes: for OTLP/HTTP the full traces URL
	// (http://localhost:4318/v1/traces), for gRPC the scheme and host followed by the
	// Export method's path.
	URL string
	// Headers are sent with every export (OTEL_EXPORTER_OTLP_HEADERS).
	Headers []Header
	// Timeout bounds one attempt, its response read included.
	Timeout time.Duration
	// Gzip compresses the request (OTEL_EXPORTER_OTLP_COMPRESSION=gzip).
	Gzip bool
	// TLS is the client's TLS configuration for an https endpoint: nil verifies the
	// collector against the system's roots.
	TLS *tls.Config
	// Retry is how a failed export that may succeed later is tried again.
	Retry Retry
}

// Header is one header of every export.
type Header struct{ Name, Value string }

// Retry is the backoff between attempts of one export: the first wait is Initial, each
// next one doubles up to Max (each drawn at random between half and all of it), unless
// the collector said how long to wait (HTTP Retry-After); no attempt starts after
// MaxElapsed from the first. Only failures the OTLP specification calls retryable are
// tried again (HTTP 429, 502, 503, 504; gRPC UNAVAILABLE and its kin; transport errors).
type Retry struct {
	Initial, Max, MaxElapsed time.Duration
}

// DefaultRetry is the OpenTelemetry Go exporters' policy: 5s, up to 30s apart, for a minute.
func DefaultRetry() Retry {
	return Retry{Initial: 5 * time.Second, Max: 30 * time.Second, MaxElapsed: time.Minute}
}

// DefaultTimeout bounds an attempt when OTEL_EXPORTER_OTLP_TIMEOUT does not say.
const DefaultTimeout = 10 * time.Second

// FromEnv reads the OpenTelemetry exporter variables through getenv, for each the
// traces-specific one (OTEL_EXPORTER_OTLP_TRACES_X) before the general one
// (OTEL_EXPORTER_OTLP_X): PROTOCOL (http/protobuf, the default, or grpc), ENDPOINT,
// INSECURE, HEADERS, TIMEOUT (milliseconds), COMPRESSION (gzip or none), CERTIFICATE,
// CLIENT_CERTIFICATE and CLIENT_KEY (PEM files, read with readFile).
//
// Endpoints follow the OTLP exporter specification: for OTLP/HTTP the general endpoint
// is a base URL the traces path /v1/traces is joined to and the traces endpoint is used
// as it is; the default is http://localhost:4318. For gRPC the endpoint's scheme says
// whether TLS is used (http: no, https: yes); an endpoint without a scheme (host:port)
// uses TLS unless INSECURE is true; the default is http://localhost:4317.
//
// A value that is set but invalid is an error naming its variable, not a default.
func FromEnv(getenv func(string) string, readFile func(string) ([]byte, error)) (Config, error) {
	env := envReader{getenv: getenv}
	cfg := Config{Protocol: HTTPProtobuf, Timeout: DefaultTimeout, Retry: DefaultRetry()}
	if name, v := env.get("PROTOCOL"); v != "" {
		switch p := Protocol(strings.TrimSpace(v)); p {
		case HTTPProtobuf, GRPC:
			cfg.Protocol = p
		default:
			return Config{}, fmt.Errorf("%s %q: want http/protobuf or grpc", name, v)
		}
	}
	insecure := false
	if name, v := env.get("INSECURE"); v != "" {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return Config{}, fmt.Errorf("%s %q: want true or false", name, v)
		}
		insecure = b
	}
	url, err := endpoint(env, cfg.Protocol, insecure)
	if err != nil {
		return Config{}, err
	}
	cfg.URL = url
	if name, v := env.get("HEADERS"); v != "" {
		if cfg.Headers, err = parseHeaders(v); err != nil {
			return Config{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	if name, v := env.get("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || ms <= 0 {
			return Config{}, fmt.Errorf("%s %q: want a positive number of milliseconds", name, v)
		}
		cfg.Timeout = time.Duration(ms) * time.Millisecond
	}
	if name, v := env.get("COMPRESSION"); v != "" {
		switch strings.TrimSpace(v) {
		case "gzip":
			cfg.Gzip = true
		case "none":
		default:
			return Config{}, fmt.Errorf("%s %q: want gzip or none", name, v)
		}
	}
	if cfg.TLS, err = tlsConfig(env, readFile); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// envReader reads OTEL_EXPORTER_OTLP_TRACES_<X>, or else OTEL_EXPORTER_OTLP_<X>.
type envReader struct{ getenv func(string) string }

// get returns the name of the variable that was set and its value ("" when neither was).
func (e envReader) get(x string) (name, value string) {
	name = "OTEL_EXPORTER_OTLP_TRACES_" + x
	if v := e.getenv(name); v != "" {
		return name, v
	}
	name = "OTEL_EXPORTER_OTLP_" + x
	return name, e.getenv(name)
}

// endpoint is Config.URL from the endpoint variables (see FromEnv).
func endpoint(env envReader, p Protocol, insecure bool) (string, error) {
	traces := env.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	name, raw := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces
	if raw == "" {
		name, raw = "OTEL_EXPORTER_OTLP_ENDPOINT", env.getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	raw = strings.TrimSpace(raw)
	if p == GRPC {
		if raw == "" {
			return "http://localhost:4317" + exportMethod, nil
		}
		if !strings.Contains(raw, "://") { // host:port, the scheme left to INSECURE
			scheme := "https://"
			if insecure {
				scheme = "http://"
			}
			raw = scheme + raw
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", fmt.Errorf("%s %q: want host:port or an http or https URL", name, raw)
		}
		return u.Scheme + "://" + u.Host + exportMethod, nil
	}
	if raw == "" {
		return "http://localhost:4318/v1/traces", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s %q: want an http or https URL", name, raw)
	}
	if traces == "" {
		u.Path = path.Join("/", u.Path, "v1/traces")
		u.RawPath = ""
	} else if u.Path == "" {
		u.Path = "/"
	}
	return u.String(), nil
}

// parseHeaders reads the headers variable's format: comma-separated name=value pairs,
// each value percent-decoded, names and values trimmed of spaces.
func parseHeaders(v string) ([]Header, error) {
	var hs []Header
	for pair := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("%q has no '='", pair)
		}
		name = strings.TrimSpace(name)
		if !validHeaderName(name) {
			return nil, fmt.Errorf("%q is not a header name", name)
		}
		decoded, err := url.PathUnescape(value)
		if err != nil {
			return nil, fmt.Errorf("the value of %s is not percent-encoded right", name)
		}
		decoded = strings.TrimSpace(decoded)
		if !validHeaderValue(decoded) {
			return nil, fmt.Errorf("the value of %s has a control character", name)
		}
		hs = append(hs, Header{Name: name, Value: decoded})
	}
	return hs, nil
}

// validHeaderName reports whether s is an HTTP token (RFC 9110).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// validHeaderValue reports whether s holds no control character but tab.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// tlsConfig builds the TLS configuration the certificate variables describe, or nil when
// none is set.
func tlsConfig(env envReader, readFile func(string) ([]byte, error)) (*tls.Config, error) {
	caName, ca := env.get("CERTIFICATE")
	certName, cert := env.get("CLIENT_CERTIFICATE")
	keyName, key := env.get("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := readFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caName, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s %q: no PEM certificate in it", caName, ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("%s and %s: set both or neither", certName, keyName)
	}
	if cert != "" {
		certPEM, err := readFile(cert)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", certName, err)
		}
		keyPEM, err := readFile(key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", keyName, err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("%s and %s: %w", certName, keyName, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}
