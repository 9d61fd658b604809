package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// This file holds the regression tests of the security hardening (issue 10): bounded label
// sets and log lines, requests rejected from their headers, connection caps, and the
// transport-level defences.

// TestLabelsAndLogsBounded sends many distinct, long model names (direct routes a key may
// use, direct routes it may not, unknown backends) and checks that they add no metric
// series and no long log line: labels come only from the configuration.
func TestLabelsAndLogsBounded(t *testing.T) {
	up := newUpstream(t, okUpstream("ok"))
	g := startGateway(t, `
backends:
  up: {type: openai, base_url: "{{UP}}", retries: {max: 0}}
models:
  cheap: {backend: up}
keys:
  wide: {key: sk-wide, models: ["up/*", "cheap"]}
  narrow: {key: sk-narrow, models: ["cheap"]}
`, map[string]string{"UP": up.v1()})
	long := strings.Repeat("x", 20<<10)
	statuses := map[string]int{}
	for i := range 30 {
		for _, c := range []struct{ key, model string }{
			{"sk-wide", fmt.Sprintf("up/%d%s", i, long)},   // allowed direct route: 200
			{"sk-narrow", fmt.Sprintf("up/%d%s", i, long)}, // forbidden direct route: 404
			{"sk-wide", fmt.Sprintf("nope/%d%s", i, long)}, // unknown backend: 404
			{"sk-narrow", fmt.Sprintf("%d%s", i, long)},    // unknown model: 404
		} {
			r := g.chat(c.key, `{"model":"`+c.model+`","messages":[{"role":"user","content":"hi"}]}`)
			statuses[fmt.Sprint(r.status)]++
			if r.status != 200 && len(r.body) > 2048 {
				t.Fatalf("%d-byte answer quotes the model whole: %.200s", len(r.body), r.body)
			}
		}
	}
	if diff := cmp.Diff(map[string]int{"200": 30, "404": 90}, statuses); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	m := g.scrape()
	var labels []string
	for _, mm := range m["gateway_requests_total"].GetMetric() {
		l := map[string]string{}
		for _, p := range mm.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		labels = append(labels, l["model"]+" "+l["backend"]+" "+l["key"]+" "+l["code"])
	}
	want := []string{"up/* up wide 200", "unknown  narrow 404", "unknown  wide 404"}
	if diff := cmp.Diff(want, labels, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("gateway_requests_total series (-want +got):\n%s", diff)
	}
	if r := g.do("GET", "/metrics", "", nil); len(r.body) > 256<<10 {
		t.Errorf("/metrics is %d bytes", len(r.body))
	}
	for _, line := range strings.Split(g.logs.String(), "\n") {
		if len(line) > 2048 {
			t.Errorf("%d-byte log line: %.300s", len(line), line)
		}
	}
	// One allowed request still reaches the upstream with its whole model name.
	client := g.client("sk-wide")
	if _, err := client.Chat.Completions.New(context.Background(), userParams("up/m"+long, "hi")); err != nil {
		t.Fatal(err)
	}
}

// TestClip pins the truncation of client-supplied strings in messages and logs.
func TestClip(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{name: "short", in: "gpt-4o", n: 8, want: "gpt-4o"},
		{name: "exact", in: "abcd", n: 4, want: "abcd"},
		{name: "cut", in: "abcdef", n: 4, want: "abcd…[6 bytes]"},
		{name: "rune not split", in: "ab€€", n: 4, want: "ab…[8 bytes]"},
		{name: "invalid utf-8", in: "a\xffb", n: 8, want: "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, clip(tt.in, tt.n)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
