package otlp_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agate-gateway/agate/telemetry/otlp"
)

const grpcExport = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// TestFromEnv: the standard variables, the traces-specific one winning, and every invalid
// value refused with its variable named.
func TestFromEnv(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := func(edit func(*otlp.Config)) otlp.Config {
		c := otlp.Config{Protocol: otlp.HTTPProtobuf, URL: "http://localhost:4318/v1/traces",
			Timeout: otlp.DefaultTimeout, Retry: otlp.DefaultRetry()}
		if edit != nil {
			edit(&c)
		}
		return c
	}
	grpc := func(url string) otlp.Config {
		return base(func(c *otlp.Config) { c.Protocol, c.URL = otlp.GRPC, url+grpcExport })
	}
	tests := []struct {
		name    string
		env     map[string]string
		want    otlp.Config
		wantErr string
	}{
		{name: "nothing set: http/protobuf to localhost:4318", want: base(nil)},
		{name: "grpc default endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			want: grpc("http://localhost:4317")},
		{name: "general endpoint is a base URL", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example:4318/prefix/"},
			want: base(func(c *otlp.Config) { c.URL = "https://c.example:4318/prefix/v1/traces" })},
		{name: "traces endpoint is used as it is", env: map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://general", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c.example/custom/path"},
			want: base(func(c *otlp.Config) { c.URL = "http://c.example/custom/path" })},
		{name: "traces endpoint without a path gets /", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c.example:9"},
			want: base(func(c *otlp.Config) { c.URL = "http://c.example:9/" })},
		{name: "grpc host:port uses TLS", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"},
			want: grpc("https://collector:4317")},
		{name: "grpc host:port, insecure", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317", "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "true"},
			want: grpc("http://collector:4317")},
		{name: "grpc scheme wins over insecure, path ignored", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4317/ignored", "OTEL_EXPORTER_OTLP_INSECURE": "true"},
			want: grpc("https://collector:4317")},
		{name: "headers, timeout, compression", env: map[string]string{
			"OTEL_EXPORTER_OTLP_HEADERS": "api-key=secret%3D1, X-Team = a%20b ,", "OTEL_EXPORTER_OTLP_TIMEOUT": "500",
			"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"},
			want: base(func(c *otlp.Config) {
				c.Headers = []otlp.Header{{Name: "api-key", Value: "secret=1"}, {Name: "X-Team", Value: "a b"}}
				c.Timeout, c.Gzip = 500*time.Millisecond, true
			})},
		{name: "traces headers win whole", env: map[string]string{
			"OTEL_EXPORTER_OTLP_HEADERS": "a=1,b=2", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "c=3", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "none",
			"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"},
			want: base(func(c *otlp.Config) { c.Headers = []otlp.Header{{Name: "c", Value: "3"}} })},

		{name: "unknown protocol", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			wantErr: `OTEL_EXPORTER_OTLP_PROTOCOL "http/json": want http/protobuf or grpc`},
		{name: "unknown traces protocol", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "udp"},
			wantErr: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL "udp": want http/protobuf or grpc`},
		{name: "insecure not a bool", env: map[string]string{"OTEL_EXPORTER_OTLP_INSECURE": "maybe"},
			wantErr: `OTEL_EXPORTER_OTLP_INSECURE "maybe": want true or false`},
		{name: "http endpoint without scheme", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"},
			wantErr: `OTEL_EXPORTER_OTLP_ENDPOINT "localhost:4318": want an http or https URL`},
		{name: "grpc endpoint of another scheme", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "unix:///tmp/s"},
			wantErr: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT "unix:///tmp/s": want host:port or an http or https URL`},
		{name: "negative timeout", env: map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "-1"},
			wantErr: `OTEL_EXPORTER_OTLP_TIMEOUT "-1": want a positive number of milliseconds`},
		{name: "timeout with a unit", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "10s"},
			wantErr: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT "10s": want a positive number of milliseconds`},
		{name: "unknown compression", env: map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"},
			wantErr: `OTEL_EXPORTER_OTLP_COMPRESSION "zstd": want gzip or none`},
		{name: "header without =", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=1,token"},
			wantErr: `OTEL_EXPORTER_OTLP_HEADERS: "token" has no '='`},
		{name: "header name with a space", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "my key=1"},
			wantErr: `OTEL_EXPORTER_OTLP_HEADERS: "my key" is not a header name`},
		{name: "header value badly escaped", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "key=%zz"},
			wantErr: `OTEL_EXPORTER_OTLP_HEADERS: the value of key is not percent-encoded right`},
		{name: "header value smuggling a line", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "key=a%0D%0AX-Evil: 1"},
			wantErr: `OTEL_EXPORTER_OTLP_TRACES_HEADERS: the value of key has a control character`},
		{name: "certificate missing", env: map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": filepath.Join(dir, "absent.pem")},
			wantErr: `OTEL_EXPORTER_OTLP_CERTIFICATE: no such file`},
		{name: "certificate not PEM", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": notPEM},
			wantErr: `OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE "` + notPEM + `": no PEM certificate in it`},
		{name: "client certificate without key", env: map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": notPEM},
			wantErr: `OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY: set both or neither`},
	}
	readFile := func(name string) ([]byte, error) {
		b, err := os.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("no such file")
		}
		return b, err
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := otlp.FromEnv(func(k string) string { return tt.env[k] }, readFile)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}
