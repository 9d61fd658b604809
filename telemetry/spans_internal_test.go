package telemetry

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
)

func TestServerAddress(t *testing.T) {
	tests := []struct {
		name, base string
		want       []attribute.KeyValue
	}{
		{"https default port", "https://api.anthropic.com", []attribute.KeyValue{attrServerAddress.String("api.anthropic.com"), attrServerPort.Int(443)}},
		{"http with port and path", "http://127.0.0.1:8081/v1", []attribute.KeyValue{attrServerAddress.String("127.0.0.1"), attrServerPort.Int(8081)}},
		{"userinfo never recorded", "https://user:secret@host.example/v1", []attribute.KeyValue{attrServerAddress.String("host.example"), attrServerPort.Int(443)}},
		{"ipv6", "http://[::1]:9000", []attribute.KeyValue{attrServerAddress.String("[::1]"), attrServerPort.Int(9000)}},
		{"ipv6 default port", "https://[::1]", []attribute.KeyValue{attrServerAddress.String("[::1]"), attrServerPort.Int(443)}},
		{"not a URL", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, serverAddress(tt.base), cmp.Comparer(func(a, b attribute.KeyValue) bool { return a == b })); diff != "" {
				t.Errorf("serverAddress(%q) (-want +got):\n%s", tt.base, diff)
			}
		})
	}
}

// FuzzServerAddress: any base URL gives at most a host and a port, never its userinfo.
func FuzzServerAddress(f *testing.F) {
	for _, s := range []string{"https://api.openai.com/v1", "http://u:p@h:1/x", "http://[::1]:80", "http://:", "https://@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, base string) {
		attrs := serverAddress(base)
		if len(attrs) != 0 && len(attrs) != 2 {
			t.Fatalf("%d attributes", len(attrs))
		}
		if len(attrs) == 2 && strings.Contains(attrs[0].Value.AsString(), "@") {
			t.Fatalf("server.address %q holds userinfo", attrs[0].Value.AsString())
		}
	})
}
