package translate

import (
	"bytes"
	"strings"
	"testing"
)

func TestCarryID(t *testing.T) {
	long := bytes.Repeat([]byte(`{"type":"thinking","thinking":"let me think about it","signature":"EuYDCmMIDBgCKkC05Zda"}`), 20)
	tests := []struct {
		name  string
		id    string
		state []byte
	}{
		{"no state keeps the id", "toolu_01", nil},
		{"small state is stored raw", "call_1", []byte(`{"sig":"abc"}`)},
		{"large state is compressed", "toolu_02", long},
		{"binary state", "call_2", []byte{0, 1, 2, 255, '~', '1'}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			carried := CarryID(tt.id, tt.state)
			id, state := SplitID(carried)
			if id != tt.id || !bytes.Equal(state, tt.state) {
				t.Fatalf("SplitID(CarryID) = %q, %q; want %q, %q", id, state, tt.id, tt.state)
			}
			if strings.ContainsAny(carried, " \"\\/+=") {
				t.Errorf("carried id %q has characters clients may mangle", carried)
			}
		})
	}
	if c := CarryID("x", long); len(c) >= len(long) {
		t.Errorf("large state not compressed: %d >= %d", len(c), len(long))
	}
}

func TestSplitID_Foreign(t *testing.T) {
	for _, s := range []string{"call_abc", "call.abc~", "toolu_x~1", "id~1z!!!", "a~1qAAAA"} {
		if id, state := SplitID(s); id != s || state != nil {
			t.Errorf("SplitID(%q) = %q, %q; want it unchanged with no state", s, id, state)
		}
	}
}

func FuzzSplitID(f *testing.F) {
	f.Add(CarryID("toolu_1", []byte("state")))
	f.Add("call_x~1zAAAA")
	f.Fuzz(func(t *testing.T, s string) {
		id, state := SplitID(s)
		if state != nil && CarryID(id, state) == "" {
			t.Fatal("empty re-carry")
		}
	})
}
