package proxy

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/ledger"
	"github.com/agate-gateway/agate/tools"
)

// TestToolLog: calls are summed by tool in the order first called, with their source,
// errors and time; the first ledger.MaxTools tools are itemized, the calls of the others
// counted; a request without a tool loop has no summary.
func TestToolLog(t *testing.T) {
	var none *toolLog
	if u, n := none.summary(); u != nil || n != 0 {
		t.Errorf("no tool loop: %v, %d", u, n)
	}
	l := &toolLog{}
	web := &tools.Definition{Name: "search__web", Source: "search", Tool: "web"}
	clock := &tools.Definition{Name: "clock", Source: "clock", Tool: "time_now"}
	l.ToolCall(web, false, 2*time.Second)
	l.ToolCall(clock, false, time.Millisecond)
	l.ToolCall(web, true, 500*time.Millisecond)
	got, omitted := l.summary()
	want := []ledger.ToolUse{{Name: "search__web", Source: "search", Calls: 2, Errors: 1, Duration: 2500 * time.Millisecond},
		{Name: "clock", Source: "clock", Calls: 1, Duration: time.Millisecond}}
	if diff := cmp.Diff(want, got); diff != "" || omitted != 0 {
		t.Errorf("summary (-want +got):\n%s; omitted %d", diff, omitted)
	}
	for i := range ledger.MaxTools + 1 { // 14 new tools fit, then 3 do not
		d := &tools.Definition{Name: "t" + strconv.Itoa(i), Source: "s"}
		l.ToolCall(d, false, 0)
		l.ToolCall(d, false, 0)
	}
	got, omitted = l.summary()
	if len(got) != ledger.MaxTools || omitted != 2*3 || got[ledger.MaxTools-1].Name != "t13" {
		t.Errorf("%d tools itemized (last %q), %d calls omitted; want %d, t13, 6", len(got), got[len(got)-1].Name, omitted, ledger.MaxTools)
	}
}
