package translate

import (
	"bytes"
	"fmt"
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

// FuzzLastCarrySep holds lastCarrySep to strings.LastIndex.
func FuzzLastCarrySep(f *testing.F) {
	for _, s := range []string{"", "~", "~1", "a~1b~", "a~1b~2", "~1~1", "toolu_01ABC", "x~~1", "~1~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := lastCarrySep(s), strings.LastIndex(s, CarrySep); got != want {
			t.Fatalf("lastCarrySep(%q) = %d, want %d", s, got, want)
		}
	})
}

func BenchmarkSplitID(b *testing.B) {
	for _, id := range []string{"toolu_01ABCDEFGHIJKLMNOPQRSTU", "call_05A7Hc9WbQm2", CarryID("toolu_01ABCDEF", []byte(`{"t":1}`))} {
		b.Run(fmt.Sprint(len(id)), func(b *testing.B) {
			for b.Loop() {
				SplitID(id)
			}
		})
	}
}
