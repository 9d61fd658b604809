package translate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSealBlock(t *testing.T) {
	long := strings.Repeat("let me think about the weather in Paris, step by step. ", 40)
	tests := []struct {
		name  string
		block ThinkingBlock
	}{
		{"anthropic thinking", ThinkingBlock{Dialect: "anthropic", Type: "thinking", Thinking: "hmm", Signature: "EuYDCmMIDBgCKkC05Zda+/="}},
		{"anthropic redacted", ThinkingBlock{Dialect: "anthropic", Type: "redacted_thinking", Data: "EmwKAhgBEgy3va3pzix/LafPsn4a"}},
		{"long thinking is compressed", ThinkingBlock{Dialect: "anthropic", Type: "thinking", Thinking: long, Signature: "sig"}},
		{"gemini call state, binary", ThinkingBlock{Dialect: "gemini", Type: "thought_signature", CallID: "call_x_0", Data: "\x03\x02\xff\x00"}},
		{"every field", ThinkingBlock{Dialect: "x-1_y", Type: "t", Thinking: "th", Signature: "s", Data: "d", ID: "rs_1", CallID: "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := SealBlock(&tt.block)
			if !strings.HasPrefix(s, SealedPrefix+tt.block.Dialect+".") {
				t.Errorf("sealed %q does not name its dialect", s)
			}
			if strings.ContainsAny(s, " \"\\/+=") {
				t.Errorf("sealed %q has characters that need escaping", s)
			}
			got, ok := OpenBlock(s)
			if !ok {
				t.Fatalf("OpenBlock(%q) failed", s)
			}
			if diff := cmp.Diff(tt.block, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
	if s := SealBlock(&ThinkingBlock{Dialect: "anthropic", Thinking: long}); len(s) >= len(long) {
		t.Errorf("long state not compressed: %d >= %d bytes", len(s), len(long))
	}
}

// TestOpenBlock_Rejects: what SealBlock did not make, or what was changed after, opens as
// no state, without error.
func TestOpenBlock_Rejects(t *testing.T) {
	good := SealBlock(&ThinkingBlock{Dialect: "anthropic", Type: "thinking", Thinking: "hmm", Signature: "sig"})
	body := strings.TrimPrefix(good, SealedPrefix+"anthropic.")
	flip := []byte(good)
	flip[len(flip)-3] ^= 1
	tests := []struct{ name, s string }{
		{"OpenAI's own encrypted content", "gAAAAABpPDIVOKrsHNZ0GwsoEKA_IGfuJ5f8Ma_6"},
		{"empty", ""},
		{"prefix only", SealedPrefix},
		{"no dialect", SealedPrefix + "." + body},
		{"dialect renamed", SealedPrefix + "gemini." + body},
		{"upper-case dialect", SealedPrefix + "Anthropic." + body},
		{"a character changed", string(flip)},
		{"truncated", good[:len(good)-2]},
		{"not base64", good + "!"},
		{"other version", "agate2.anthropic." + body},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, ok := OpenBlock(tt.s); ok {
				t.Errorf("OpenBlock(%q) = %+v, want no block", tt.s, b)
			}
		})
	}
}

func FuzzOpenBlock(f *testing.F) {
	f.Add(SealBlock(&ThinkingBlock{Dialect: "anthropic", Type: "thinking", Thinking: "hmm", Signature: "sig"}))
	f.Add(SealBlock(&ThinkingBlock{Dialect: "gemini", Type: "thought_signature", Thinking: strings.Repeat("ab", 100)}))
	f.Add("agate1.anthropic.AAAAAAAA")
	f.Fuzz(func(t *testing.T, s string) {
		b, ok := OpenBlock(s)
		if !ok {
			return
		}
		again, ok := OpenBlock(SealBlock(&b))
		if !ok {
			t.Fatalf("a block opened from %q does not reopen after sealing", s)
		}
		if diff := cmp.Diff(b, again); diff != "" {
			t.Fatalf("reseal (-first +second):\n%s", diff)
		}
	})
}
