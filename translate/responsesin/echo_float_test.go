package responsesin

import (
	"strconv"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// plainDecimalSeeds are literals on both sides of plainDecimal's rule.
var plainDecimalSeeds = []string{
	"0", "1", "2", "7", "0.7", "0.95", "1.5", "0.0001", "0.00001", "0.1000", "0.10", "1.0", "10", "00",
	"0.", ".5", "-0", "-0.5", "1e0", "0.7e1", "1.23456789012345", "1.234567890123456", "0.000123456789012345",
	"0.0001234567890123456", "0.30000000000000004", "9.999999999999999", "2.0000000000000001", "0x1", "1.5 ", "",
}

// TestPlainDecimal: what plainDecimal takes is what strconv writes back as it is; a few it
// leaves to strconv.
func TestPlainDecimal(t *testing.T) {
	for _, tt := range []struct {
		lit  string
		want bool
	}{
		{"0", true}, {"1", true}, {"0.7", true}, {"0.95", true}, {"1.5", true}, {"0.0001", true},
		{"1.23456789012345", true}, {"0.000123456789012345", true},
		{"0.00001", false}, {"0.10", false}, {"1.0", false}, {"10", false}, {"0.", false}, {"-0.5", false},
		{"1e0", false}, {"1.234567890123456", false}, {"0.30000000000000004", false}, {"", false},
	} {
		if got := plainDecimal(tt.lit); got != tt.want {
			t.Errorf("plainDecimal(%q) = %v, want %v", tt.lit, got, tt.want)
		}
		checkPlainDecimal(t, tt.lit)
	}
}

// TestEcho_FloatLiterals: the Response's echo of temperature and top_p is the same whether
// the literal is copied or formatted (a request read with the literal rule off).
func TestEcho_FloatLiterals(t *testing.T) {
	for _, lit := range plainDecimalSeeds {
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil || f < 0 || f > 1 || jsonx.NumberEnd(lit, 0) != len(lit) {
			continue // not a JSON number top_p takes
		}
		body := `{"model":"m","input":"hi","temperature":` + lit + `,"top_p":` + lit + `}`
		r := mustParse(t, body)
		want := `"temperature":` + strconv.FormatFloat(f, 'g', -1, 64) + `,`
		if echo := string(r.echo); !strings.Contains(echo, want) || !strings.Contains(echo, `"top_p":`+strconv.FormatFloat(f, 'g', -1, 64)+`,`) {
			t.Errorf("%s: echo %s, want %s and the same top_p", body, echo, want)
		}
	}
}

// checkPlainDecimal fails when plainDecimal takes lit and strconv does not write lit's
// float64 as lit.
func checkPlainDecimal(t *testing.T, lit string) {
	t.Helper()
	if !plainDecimal(lit) {
		return
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		t.Fatalf("plainDecimal(%q) took what ParseFloat refuses: %v", lit, err)
	}
	if got := strconv.FormatFloat(f, 'g', -1, 64); got != lit {
		t.Fatalf("plainDecimal(%q) took it; strconv writes %s", lit, got)
	}
}

// FuzzPlainDecimalMatchesStrconv: whatever plainDecimal takes, strconv's shortest 'g'
// format (jsonx.AppendFloat, the echo's) writes back byte for byte.
func FuzzPlainDecimalMatchesStrconv(f *testing.F) {
	for _, s := range plainDecimalSeeds {
		f.Add(s)
	}
	f.Fuzz(checkPlainDecimal)
}
