package gatewaytest

import (
	"bytes"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Require returns the path of the executable name on PATH. Without it the test is skipped,
// or fails under CI=true, where .ci/run installs it; install says how (an npm package or a
// Debian package).
func Require(t testing.TB, name, install string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	Missing(t, name+" is not on PATH", install)
	return ""
}

// Missing skips the test because what is missing, or fails it under CI=true, where .ci/run
// installs it; install says how.
func Missing(t testing.TB, what, install string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; .ci/run installs it (%s)", what, install)
	}
	t.Skipf("%s (%s); skipping", what, install)
}

// OpenAI is an openai-go client of the gateway at base (its /v1 URL) with key, without
// retries; opts come after those.
func OpenAI(base, key string, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(base), option.WithAPIKey(key),
		option.WithMaxRetries(0)}, opts...)...)
}

// Anthropic is an anthropic-sdk-go client of the gateway at base (its root URL) with key,
// without retries and with a 30-second request timeout; opts come after those.
func Anthropic(base, key string, opts ...aoption.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]aoption.RequestOption{aoption.WithBaseURL(base), aoption.WithAPIKey(key),
		aoption.WithMaxRetries(0), aoption.WithRequestTimeout(30 * time.Second)}, opts...)...)
}

// Buffer is a goroutine-safe bytes.Buffer for the logs of a gateway or a process a test
// runs.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what has been written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
