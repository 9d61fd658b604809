package translate

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"
)

// deflated returns b compressed.
func deflated(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestCompression)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// zID is a carry id whose state is raw as compressed, whether or not it inflates.
func zID(id string, raw []byte) string {
	return id + CarrySep + "z" + base64.RawURLEncoding.EncodeToString(raw)
}

// sealedRaw is a sealed block whose compressed fields are raw, whether or not they
// inflate, with a valid checksum.
func sealedRaw(raw []byte) string {
	body := append([]byte{sealedFlate}, raw...)
	body = binary.BigEndian.AppendUint32(body, sealedSum("anthropic", body))
	return SealedPrefix + "anthropic." + base64.RawURLEncoding.EncodeToString(body)
}

// TestAllowance_CarryIDs: OpenCarried charges each compressed state's inflated size to the
// request's allowance, an id seen again its size again (written upstream again) without
// inflating it again, and refuses the id that would go beyond; state that does not
// inflate or inflates beyond one state's bound is dropped, its bytes charged.
func TestAllowance_CarryIDs(t *testing.T) {
	state := []byte(`[{"type":"thinking","thinking":"` + strings.Repeat("x", 1000) + `","signature":"s"}]`)
	n := len(state)
	for _, tt := range []struct {
		name      string
		ids       []string
		allowance int
		refused   int // the index of the refused id, -1 for none
		left      int
	}{
		{"no carry", []string{"call_1", "toolu_~x", "a~1"}, 10, -1, 10},
		{"raw state is free", []string{CarryID("c", []byte("short"))}, 0, -1, 0},
		{"one state", []string{CarryID("c", state)}, n, -1, 0},
		{"one byte short", []string{CarryID("c", state)}, n - 1, 0, 0},
		{"the second", []string{CarryID("a", state), CarryID("b", state)}, 2*n - 1, 1, 0},
		{"the same id twice", []string{CarryID("a", state), CarryID("a", state)}, 2*n - 1, 1, 0},
		{"the same id twice, within", []string{CarryID("a", state), CarryID("a", state)}, 2 * n, -1, 0},
		{"not deflate", []string{zID("a", []byte("not deflate at all"))}, 100, -1, 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r Request
			a := NewAllowance(tt.allowance)
			refused := -1
			for i, id := range tt.ids {
				if !r.OpenCarried(id, &a) {
					refused = i
					break
				}
			}
			if refused != tt.refused || a.Left() != tt.left {
				t.Fatalf("refused %d, left %d; want %d, %d", refused, a.Left(), tt.refused, tt.left)
			}
			if refused >= 0 {
				return
			}
			for _, id := range tt.ids {
				want, wantState := SplitID(id)
				got, gotState := r.SplitID(id)
				if got != want || !bytes.Equal(gotState, wantState) {
					t.Errorf("SplitID(%.20q) = %q, %d bytes; want %q, %d", id, got, len(gotState), want, len(wantState))
				}
			}
		})
	}
	// Beyond one state's bound: dropped as not the gateway's, maxInflated+1 bytes charged.
	var r Request
	a := NewAllowance(3 * maxInflated)
	id := zID("c", deflated(make([]byte, maxInflated+10)))
	if !r.OpenCarried(id, &a) || a.Left() != 2*maxInflated {
		t.Fatalf("left %d, want %d", a.Left(), 2*maxInflated)
	}
	if _, st := r.SplitID(id); st != nil {
		t.Errorf("state of %d bytes, want none", len(st))
	}
}

// TestAllowance_SealedBlocks: OpenBlock charges a sealed block's inflated fields and
// reports over when they go beyond what is left; an uncompressed block is free.
func TestAllowance_SealedBlocks(t *testing.T) {
	b := ThinkingBlock{Dialect: "anthropic", Type: "thinking", Thinking: strings.Repeat("t", 5000), Signature: "s"}
	s := SealBlock(&b)
	small := SealBlock(&ThinkingBlock{Dialect: "anthropic", Type: "thinking", Thinking: "t", Signature: "s"})
	a := NewAllowance(12000)
	for i, want := range []struct{ ok, over bool }{{true, false}, {true, false}, {false, true}} {
		got, ok, over := a.OpenBlock(s)
		if ok != want.ok || over != want.over || ok && got != b {
			t.Fatalf("block %d: ok %v over %v, want %v %v", i, ok, over, want.ok, want.over)
		}
	}
	if a.Left() != 0 {
		t.Errorf("left %d after going beyond, want 0", a.Left())
	}
	if _, ok, over := a.OpenBlock(small); !ok || over {
		t.Errorf("an uncompressed block: ok %v over %v, want it free", ok, over)
	}
}

// FuzzInflateBound: whatever a request's carry ids and sealed blocks hold (any bytes as
// their compressed state, any number of them, any allowance), the state they open is never
// more than the allowance in all, what is left never negative, and what was charged at
// least what was opened.
func FuzzInflateBound(f *testing.F) {
	f.Add(deflated(make([]byte, 1<<20)), uint32(100000), uint8(4))
	f.Add(deflated([]byte(`[{"type":"thinking","thinking":"abc","signature":"s"}]`)), uint32(60), uint8(2))
	f.Add([]byte("not deflate"), uint32(10), uint8(1))
	f.Add(deflated(bytes.Repeat([]byte{1, 0, 'a'}, 3000)), uint32(9000), uint8(3))
	f.Fuzz(func(t *testing.T, raw []byte, allowance uint32, n uint8) {
		limit := int(allowance % (4 << 20))
		a := NewAllowance(limit)
		var r Request
		opened := 0
		for i := range int(n % 8) {
			id := zID("c"+string(rune('a'+i)), raw)
			if !r.OpenCarried(id, &a) {
				break
			}
			_, st := r.SplitID(id)
			opened += len(st)
			b, ok, over := a.OpenBlock(sealedRaw(raw))
			if over {
				break
			}
			if ok {
				opened += len(b.Type) + len(b.Thinking) + len(b.Signature) + len(b.Data) + len(b.ID) + len(b.CallID)
			}
		}
		if a.Left() < 0 || opened > limit || opened > limit-a.Left() {
			t.Fatalf("allowance %d: opened %d, left %d", limit, opened, a.Left())
		}
	})
}
