package anthropic

import (
	"bytes"
	"testing"

	"github.com/agate-gateway/agate/translate"
)

// appendIDBytewise is anthropicAppendID's definition, a byte at a time: the oracle of
// TestAppendIDEveryPlace and FuzzAppendIDMatchesBytewise.
func appendIDBytewise(dst []byte, id string) []byte {
	if id == "" {
		return append(dst, `"_"`...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			c = '_'
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

// TestAppendIDEveryPlace puts every byte value at every place of ids of 1 to 24 bytes
// (idClean's whole words and its tail) and compares anthropicAppendID with the byte-wise
// definition.
func TestAppendIDEveryPlace(t *testing.T) {
	const base = "call_00A7Hc9WbQm2xyzXYZ-_"
	for n := 1; n <= 24; n++ {
		for at := 0; at < n; at++ {
			for c := range 256 {
				id := []byte(base[:n])
				id[at] = byte(c)
				if got, want := anthropicAppendID([]byte("x"), string(id)), appendIDBytewise([]byte("x"), string(id)); !bytes.Equal(got, want) {
					t.Fatalf("id %q: %q, want %q", id, got, want)
				}
			}
		}
	}
}

func FuzzAppendIDMatchesBytewise(f *testing.F) {
	for _, s := range []string{"", "call_00A7Hc9WbQm2", "toolu_01A09q90qw90lq917835lq9", "fc.123/x y", `a"b\c`, "idé", "call_abc|H4sIAAAAAAAA/w=="} {
		f.Add([]byte("pre"), s)
	}
	fuzzAppendID(f, "anthropicAppendID", anthropicAppendID, appendIDBytewise)
}

// fuzzAppendID runs f's fuzz target: for any id after any bytes, got (named name) appends
// what want appends.
func fuzzAppendID(f *testing.F, name string, got, want func([]byte, string) []byte) {
	f.Fuzz(func(t *testing.T, dst []byte, id string) {
		if g, w := got(bytes.Clone(dst), id), want(bytes.Clone(dst), id); !bytes.Equal(g, w) {
			t.Fatalf("%s(%q, %q) = %q, want %q", name, dst, id, g, w)
		}
	})
}

// BenchmarkAppendID writes the two tool call ids of a scenario d turn (OpenAI's, 17
// bytes) and an Anthropic toolu id, as tool_use ids: as they are (plain), and as the
// writer reads them from a request, through their CarriedID (carried). Each id's
// function is called through a func value (a few instructions an id more than a direct
// call).
func BenchmarkAppendID(b *testing.B) {
	for _, bc := range []struct {
		name     string
		appendID func([]byte, string) []byte
	}{{"plain", anthropicAppendID}, {"carried", anthropicAppendCarriedID}} {
		b.Run(bc.name, func(b *testing.B) {
			dst := make([]byte, 0, 128)
			b.ReportAllocs()
			for b.Loop() {
				dst = bc.appendID(dst[:0], "call_00A7Hc9WbQm2")
				dst = bc.appendID(dst, "call_00Kx3PzR8Lt5")
				dst = bc.appendID(dst, "toolu_01A09q90qw90lq917835lq9")
			}
		})
	}
}

// carriedIDCases are ids as a request's history holds them: plain, mended, and carrying
// state (translate.CarryID's, raw and compressed), with look-alikes that carry none.
func carriedIDCases() []string {
	state := []byte(`[{"type":"thinking","thinking":"Let me look.","signature":"c2ln"}]`)
	big := bytes.Repeat(state, 20) // compressed when it pays
	return []string{
		"", "call_00A7Hc9WbQm2", "toolu_01A09q90qw90lq917835lq9", "fc.123/x y", "idé",
		translate.CarryID("call_00A7Hc9WbQm2", state), translate.CarryID("toolu_01", big),
		translate.CarryID("fc.1 2", state), translate.CarryID("", state),
		"call~1", "call~1r", "call~1rAB=", "call~1x" + "QUJD", "~1rQUJD", "a~b~1rQUJD~1", "call~",
	}
}

// TestAppendCarriedID: anthropicAppendCarriedID writes what anthropicAppendID writes for
// translate.CarriedID(id); an id that carries state, or holds any byte the pattern
// forbids, takes CarriedID's path (a '~' is never an id byte).
func TestAppendCarriedID(t *testing.T) {
	if idBytes[translate.CarrySep[0]] != 0 {
		t.Fatalf("the carry separator's first byte %q is an id byte: a clean id could carry state", translate.CarrySep[0])
	}
	for _, id := range carriedIDCases() {
		want := anthropicAppendID([]byte("x:"), translate.CarriedID(id))
		if got := anthropicAppendCarriedID([]byte("x:"), id); !bytes.Equal(got, want) {
			t.Errorf("anthropicAppendCarriedID(%q) = %q, want %q", id, got, want)
		}
	}
	// The state is dropped: a carrying id goes out as its plain id.
	if got := anthropicAppendCarriedID(nil, carriedIDCases()[5]); string(got) != `"call_00A7Hc9WbQm2"` {
		t.Errorf("a carrying id goes out as %s", got)
	}
}

// FuzzAppendCarriedIDMatchesCarriedID holds anthropicAppendCarriedID to anthropicAppendID
// of translate.CarriedID for any id after any bytes.
func FuzzAppendCarriedIDMatchesCarriedID(f *testing.F) {
	for _, id := range carriedIDCases() {
		f.Add([]byte("pre"), id)
	}
	fuzzAppendID(f, "anthropicAppendCarriedID", anthropicAppendCarriedID, func(dst []byte, id string) []byte {
		return anthropicAppendID(dst, translate.CarriedID(id))
	})
}
