package translate

import (
	"bytes"
	"encoding/base64"
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
	for _, s := range []string{"call_abc", "call.abc~", "toolu_x~1", "id~1z!!!", "a~1qAAAA", "a~1rAAAAA", "a~1rAA\nAA", "a~1rAA=="} {
		if id, state := SplitID(s); id != s || state != nil {
			t.Errorf("SplitID(%q) = %q, %q; want it unchanged with no state", s, id, state)
		}
		if id := CarriedID(s); id != s {
			t.Errorf("CarriedID(%q) = %q, want it unchanged", s, id)
		}
	}
}

// TestSplitID_Unreadable: compressed state that does not inflate is dropped, and the id is
// still the part before the separator, as CarriedID (which does not inflate) says.
func TestSplitID_Unreadable(t *testing.T) {
	for _, s := range []string{"call_x~1zAAAA", "call_x~1z", "call_x~1z" + strings.Repeat("_", 40)} {
		if id, state := SplitID(s); id != "call_x" || state != nil {
			t.Errorf("SplitID(%q) = %q, %q; want call_x and no state", s, id, state)
		}
		if id := CarriedID(s); id != "call_x" {
			t.Errorf("CarriedID(%q) = %q, want call_x", s, id)
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
		if c := CarriedID(s); c != id {
			t.Fatalf("CarriedID(%q) = %q, SplitID's id %q", s, c, id)
		}
	})
}

// FuzzRawURLBase64 holds rawURLBase64 to the decoder it stands for, on text without the
// line breaks the decoder skips.
func FuzzRawURLBase64(f *testing.F) {
	for _, s := range []string{"", "A", "AA", "AAA", "AAAA", "AAAAA", "a-_9", "AA==", "A+/B", "zz!z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, enc string) {
		if strings.ContainsAny(enc, "\r\n") {
			return
		}
		_, err := base64.RawURLEncoding.DecodeString(enc)
		if got := rawURLBase64(enc); got != (err == nil) {
			t.Fatalf("rawURLBase64(%q) = %v, decoder error %v", enc, got, err)
		}
	})
}

// FuzzLastCarrySep holds lastCarrySep to strings.LastIndex.
func FuzzLastCarrySep(f *testing.F) {
	for _, s := range []string{"", "~", "~1", "a~1b~", "a~1b~2", "~1~1", "toolu_01ABC", "x~~1", "~1~", "~~~~1~1", "a~1~1~1~1~1b", "call_r_0~1rAloK0gIB0e2Kb0GLIWsl"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := lastCarrySep(s), strings.LastIndex(s, CarrySep); got != want {
			t.Fatalf("lastCarrySep(%q) = %d, want %d", s, got, want)
		}
	})
}

// BenchmarkSplitID splits plain ids, one carrying small raw state, and one carrying an
// Anthropic thinking block (~1 KB of thinking text and a ~1.2 KB signature, compressed);
// CarriedID is the same split for a caller that drops the state.
func BenchmarkSplitID(b *testing.B) {
	sig := make([]byte, 900)
	for i := range sig {
		sig[i] = byte(i * 131 % 251) // incompressible enough, like a real signature
	}
	thinking := CarryID("toolu_01ABCDEF", []byte(`[{"type":"thinking","thinking":"`+
		strings.Repeat("The user wants the weather in Paris, so I should call the weather tool and then summarise. ", 12)+
		`","signature":"`+base64.StdEncoding.EncodeToString(sig)+`"}]`))
	for _, id := range []string{"toolu_01ABCDEFGHIJKLMNOPQRSTU", "call_05A7Hc9WbQm2", CarryID("toolu_01ABCDEF", []byte(`{"t":1}`)), thinking} {
		b.Run(fmt.Sprintf("split/%d", len(id)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				SplitID(id)
			}
		})
		b.Run(fmt.Sprintf("carried-id/%d", len(id)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				CarriedID(id)
			}
		})
	}
}
