package openaitest

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps the failures instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

func frames(chunks ...string) []byte {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	return []byte(b.String())
}

const head = `"id":"c","object":"chat.completion.chunk","created":1,"model":"m"`

func TestCheckChunks(t *testing.T) {
	role := `{` + head + `,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	stop := `{` + head + `,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	usage := `{` + head + `,"choices":[],"usage":{"prompt_tokens":1}}`
	tests := []struct {
		name    string
		body    []byte
		want    Want
		wantErr string // a substring of the first failure; "" for none
	}{
		{name: "valid with usage", body: frames(role, stop, usage, "[DONE]")},
		{name: "valid without usage", body: frames(role, stop, "[DONE]"), want: Want{Usage: UsageNone}},
		{name: "usage missing", body: frames(role, stop, "[DONE]"), wantErr: "0 usage chunks"},
		{name: "no DONE", body: frames(role, stop, usage), wantErr: "neither"},
		{name: "two finishes", body: frames(role, stop, stop, usage, "[DONE]"), wantErr: "2 finish_reason"},
		{name: "wrong model", body: frames(role, stop, usage, "[DONE]"), want: Want{Model: "x"}, wantErr: `model "m", want "x"`},
		{name: "error end allowed", body: frames(role, `{"error":{"message":"x"}}`), want: Want{ErrorEnd: true}},
		{name: "error end refused", body: frames(role, `{"error":{"message":"x"}}`), wantErr: "error frame"},
		{name: "tool call without id", body: frames(role,
			`{`+head+`,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}}]},"finish_reason":null}]}`,
			stop, usage, "[DONE]"), wantErr: "lacks id"},
		{name: "empty chunk", body: frames(`{`+head+`,"choices":[]}`, role, stop, usage, "[DONE]"), wantErr: "no choices and no usage"},
		{name: "empty chunk allowed", body: frames(`{`+head+`,"choices":[]}`, role, stop, usage, "[DONE]"), want: Want{EmptyChunks: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			CheckChunks(r, tt.body, tt.want)
			switch {
			case tt.wantErr == "" && len(r.errs) > 0:
				t.Errorf("unexpected failures: %q", r.errs)
			case tt.wantErr != "" && (len(r.errs) == 0 || !strings.Contains(r.errs[0], tt.wantErr)):
				t.Errorf("failures %q, want one with %q", r.errs, tt.wantErr)
			}
		})
	}
}
