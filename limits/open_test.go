package limits

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestErrorLog_RateLimited: every error is counted, but each operation logs at most one
// line per interval, naming how many it left out.
func TestErrorLog_RateLimited(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(1_700_000_000, 0)
	counted := map[string]int{}
	e := &ErrorLog{Logger: slog.New(slog.NewTextHandler(&out, nil)), Count: func(op string) { counted[op]++ },
		Interval: 10 * time.Second, Now: func() time.Time { return now }}
	boom := errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	steps := []struct {
		advance time.Duration
		op      string
	}{{0, "admit"}, {time.Second, "admit"}, {time.Second, "admit"}, {0, "finish"}, {10 * time.Second, "admit"}}
	for _, s := range steps {
		now = now.Add(s.advance)
		e.StateError(s.op, boom)
	}
	if diff := cmp.Diff(map[string]int{"admit": 4, "finish": 1}, counted); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var got []string
	for _, l := range lines {
		i := strings.Index(l, "op=")
		got = append(got, l[i:])
	}
	want := []string{
		`op=admit error="dial tcp 127.0.0.1:6379: connect: connection refused" suppressed_since_last=0`,
		`op=finish error="dial tcp 127.0.0.1:6379: connect: connection refused" suppressed_since_last=0`,
		`op=admit error="dial tcp 127.0.0.1:6379: connect: connection refused" suppressed_since_last=2`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}
}

func TestOpen(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		want    string // the limiter's type
		wantErr string
	}{
		{name: "default", opts: Options{}, want: "*limits.Memory"},
		{name: "memory", opts: Options{Store: StoreMemory}, want: "*limits.Memory"},
		{name: "redis", opts: Options{Store: StoreRedis, URL: "redis://127.0.0.1:1/0"}, want: "*limits.Redis"},
		{name: "bad url not quoted", opts: Options{Store: StoreRedis, URL: "redis://u:s3cret@[::1/0"}, wantErr: "state.url: not a valid redis URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Open(tt.opts, nil)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Open error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if got := typeName(l); got != tt.want {
				t.Errorf("Open = %s, want %s", got, tt.want)
			}
		})
	}
}

func typeName(l Limiter) string {
	switch l.(type) {
	case *Memory:
		return "*limits.Memory"
	case *Redis:
		return "*limits.Redis"
	}
	return "?"
}
