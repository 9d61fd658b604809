package proxy

import (
	"strings"
	"testing"
)

// TestAnsweredModel_Clipped: the access line's answered_model is the answering route's name
// clipped to maxLoggedString and made valid UTF-8, whether the route was made with its
// clipped name (logName, as the runtime makes routes) or without it.
func TestAnsweredModel_Clipped(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	long := strings.Repeat("m", maxLoggedString+40)
	for _, name := range []string{"claude-bench", long, "bad\xffname", "openai/" + long} {
		want := clip(name, maxLoggedString)
		for _, r := range []*route{{name: name, logName: clip(name, maxLoggedString)}, {name: name}} {
			c := &requestRun{answeredBy: r, route: r}
			if got, fallback := c.answeredModel(); got != want || fallback {
				t.Errorf("answeredModel of %q (logName %q) = %q, %v; want %q, false", name, r.logName, got, fallback, want)
			}
		}
	}
	if got, _ := (&requestRun{}).answeredModel(); got != "" {
		t.Errorf("no answer: %q", got)
	}
}
