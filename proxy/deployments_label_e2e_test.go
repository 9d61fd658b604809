package proxy_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// TestDeployments_UpstreamLabel: gateway_upstream_duration_seconds names the deployment
// each attempt went to: "<backend>/<upstream model>" for every deployment of a model and
// for a one-backend model, "<backend>/*" for a model the client named, so that one
// client's model names cannot grow the series.
func TestDeployments_UpstreamLabel(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	var urls []string
	for i := range 2 {
		urls = append(urls, newCachingAnthropic(t, fmt.Sprintf("d%d", i)).srv.URL)
	}
	g := gatewaytest.StartYAML(t, poolYAML(urls, "weighted", "off", "", "  single: {backend: d0, upstream_model: claude-haiku-4-5}\n"), gatewaytest.Options{Runtime: proxy.TestRuntime})
	c := gatewaytest.Anthropic(g.URL, "client-key")
	for _, model := range []string{"pool", "pool", "single", "d1/claude-opus-4-1", "d1/any-name-a-client-picks"} {
		if _, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 64,
			Messages: []anthropic.MessageParam{userText("hello")}}); err != nil {
			t.Fatalf("%s: %v", model, err)
		}
	}
	got := map[string]uint64{}
	mfs, err := g.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "gateway_upstream_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["backend"]+" "+labels["deployment"]+" "+labels["code"]] += m.GetHistogram().GetSampleCount()
		}
	}
	want := map[string]uint64{
		"d0 d0/claude-sonnet-4-5 200": 1, "d1 d1/claude-sonnet-4-5 200": 1, // weighted: one each
		"d0 d0/claude-haiku-4-5 200": 1,
		"d1 d1/* 200":                2,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) { // fmt prints maps sorted by key
		t.Errorf("upstream attempts by backend, deployment, code:\n got %v\nwant %v", got, want)
	}
}
