package translate_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
)

// TestEmbedLimitsBatches: inputs go out in order, in batches of at most Inputs and, when
// Tokens is set, of at most that many estimated tokens, an input over the bound alone; the
// first send error stops the split.
func TestEmbedLimitsBatches(t *testing.T) {
	text := func(n int) translate.EmbedInput { return translate.EmbedInput{Text: strings.Repeat("x", 4*n)} } // n tokens
	in := []translate.EmbedInput{text(3), text(3), text(3), text(10), text(1), {Tokens: []int64{1, 2}}}
	tests := []struct {
		name   string
		limits translate.EmbedLimits
		want   []int // batch sizes
	}{
		{"inputs", translate.EmbedLimits{Inputs: 4}, []int{4, 2}},
		{"one a request", translate.EmbedLimits{Inputs: 1}, []int{1, 1, 1, 1, 1, 1}},
		{"tokens", translate.EmbedLimits{Inputs: 100, Tokens: 6}, []int{2, 1, 1, 2}},
		{"both", translate.EmbedLimits{Inputs: 1 << 10, Tokens: 20}, []int{5, 1}},
		{"zero inputs is one", translate.EmbedLimits{}, []int{1, 1, 1, 1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			var seen []translate.EmbedInput
			err := tt.limits.Batches(in, func(b []translate.EmbedInput) error {
				got = append(got, len(b))
				seen = append(seen, b...)
				return nil
			})
			if err != nil || !reflect.DeepEqual(got, tt.want) || !reflect.DeepEqual(seen, in) {
				t.Errorf("batches %v (err %v), want %v in order", got, err, tt.want)
			}
		})
	}
	stop := errors.New("stop")
	calls := 0
	err := translate.EmbedLimits{Inputs: 1}.Batches(in, func([]translate.EmbedInput) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("after an error: %v, %d calls", err, calls)
	}
}
