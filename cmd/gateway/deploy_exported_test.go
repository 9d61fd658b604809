package main

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/agate-gateway/agate/metrics"
)

// series describes one series name Prometheus stores from Agate's /metrics.
type series struct {
	labels map[string]bool
	// cumulative is true for counters and the _bucket, _sum and _count series of
	// histograms and summaries: the series rate() and increase() make sense over.
	cumulative bool
	// bucket is true for a histogram's _bucket series.
	bucket bool
}

// exportedSet maps every series name Agate exports to its description.
type exportedSet map[string]series

// exportedSeries builds the set from a real metrics.New registry. Every vector of
// metrics.Metrics is touched first (with as many label values as it takes), so that the
// registry exports each of them with its label names; nothing is listed by hand.
func exportedSeries(t testing.TB) exportedSet {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		field := v.Type().Field(i).Name
		get := v.Field(i).MethodByName("GetMetricWithLabelValues")
		if !get.IsValid() {
			continue // a plain Gauge or Histogram: exported as is
		}
		touched := false
		for n := 0; n <= 16 && !touched; n++ {
			args := make([]reflect.Value, n)
			for j := range args {
				args[j] = reflect.ValueOf("x")
			}
			out := get.Call(args)
			touched = out[len(out)-1].IsNil()
		}
		if !touched {
			t.Fatalf("metrics.Metrics.%s: no number of label values is accepted", field)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	set := exportedSet{}
	for _, f := range families {
		labels := map[string]bool{}
		for _, mm := range f.GetMetric() {
			for _, l := range mm.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		with := func(extra string) map[string]bool {
			out := map[string]bool{extra: true}
			for l := range labels {
				out[l] = true
			}
			return out
		}
		name := f.GetName()
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			set[name] = series{labels: labels, cumulative: true}
		case dto.MetricType_GAUGE, dto.MetricType_UNTYPED:
			set[name] = series{labels: labels}
		case dto.MetricType_HISTOGRAM:
			set[name+"_bucket"] = series{labels: with("le"), cumulative: true, bucket: true}
			set[name+"_sum"] = series{labels: labels, cumulative: true}
			set[name+"_count"] = series{labels: labels, cumulative: true}
		case dto.MetricType_SUMMARY:
			set[name] = series{labels: with("quantile")}
			set[name+"_sum"] = series{labels: labels, cumulative: true}
			set[name+"_count"] = series{labels: labels, cumulative: true}
		default:
			t.Fatalf("%s: metric type %v unknown to this test", name, f.GetType())
		}
	}
	return set
}

// TestExportedSeries pins the derivation itself: the touched vectors show up with their
// label names and the histogram suffixes, so a check against the set is a real check.
func TestExportedSeries(t *testing.T) {
	set := exportedSeries(t)
	labelsOf := func(name string) []string {
		s, ok := set[name]
		if !ok {
			return []string{"<not exported>"}
		}
		out := []string{}
		for l := range s.labels {
			out = append(out, l)
		}
		sort.Strings(out)
		return out
	}
	tests := []struct {
		name   string
		series string
		want   []string
	}{
		{name: "counter vector", series: "gateway_requests_total", want: []string{"api", "backend", "code", "key", "model", "stream"}},
		{name: "histogram buckets", series: "gateway_time_to_first_token_seconds_bucket", want: []string{"backend", "le", "model"}},
		{name: "histogram count", series: "gateway_upstream_duration_seconds_count", want: []string{"backend", "code", "deployment"}},
		{name: "plain gauge", series: "gateway_inflight_requests", want: []string{}},
		{name: "plain histogram sum", series: "gateway_loop_iterations_sum", want: []string{}},
		{name: "process collector", series: "process_resident_memory_bytes", want: []string{}},
		{name: "histogram has no bare series", series: "gateway_request_duration_seconds", want: []string{"<not exported>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, labelsOf(tt.series)); diff != "" {
				t.Errorf("labels of %s (-want +got):\n%s", tt.series, diff)
			}
		})
	}
}

// grafanaMacros are the Grafana variables the dashboard may use in place of a duration,
// with the value used to parse (and, in the end-to-end test, evaluate) an expression.
var grafanaMacros = map[string]string{
	"$__rate_interval": "5m",
	"$__interval":      "15s",
	"$__range":         "15m",
}

// expandGrafana replaces Grafana's duration macros by durations and the dashboard's
// template variables by ".*" (their "All" value), so the result is plain PromQL.
func expandGrafana(expr string, variables []string) (string, error) {
	for m, v := range grafanaMacros {
		expr = strings.ReplaceAll(expr, m, v)
	}
	for _, name := range variables {
		expr = strings.ReplaceAll(expr, "${"+name+"}", ".*")
		expr = strings.ReplaceAll(expr, "$"+name, ".*")
	}
	if i := strings.Index(expr, "$"); i >= 0 {
		return "", fmt.Errorf("unknown variable at %q", expr[i:])
	}
	return expr, nil
}

// check parses expr with the Prometheus PromQL parser and returns what it names that Agate
// does not export: metric names, label names in matchers, groupings and vector matching,
// and two classic mistakes (rate over a gauge, histogram_quantile without le).
func (set exportedSet) check(expr string) []string {
	ast, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return []string{fmt.Sprintf("parse: %v", err)}
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	parser.Inspect(ast, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			if n.Name == "" {
				add("selector %s has no metric name", n)
				return nil
			}
			s, ok := set[n.Name]
			if !ok {
				add("metric %s is not exported", n.Name)
				return nil
			}
			for _, m := range n.LabelMatchers {
				if m.Name != "__name__" && !s.labels[m.Name] {
					add("metric %s has no label %s", n.Name, m.Name)
				}
			}
		case *parser.AggregateExpr:
			have := set.labelsUnder(n.Expr)
			for _, l := range n.Grouping {
				if !have[l] {
					add("%s groups by %s, which %s does not carry", n.Op, l, n.Expr)
				}
			}
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				have := set.labelsUnder(n.LHS)
				for l := range set.labelsUnder(n.RHS) {
					have[l] = true
				}
				for _, l := range slices.Concat(n.VectorMatching.MatchingLabels, n.VectorMatching.Include) {
					if !have[l] {
						add("vector matching on %s, which neither side carries", l)
					}
				}
			}
		case *parser.Call:
			switch n.Func.Name {
			case "rate", "irate", "increase":
				if ms, ok := n.Args[0].(*parser.MatrixSelector); ok {
					if vs, ok := ms.VectorSelector.(*parser.VectorSelector); ok {
						if s, ok := set[vs.Name]; ok && !s.cumulative {
							add("%s over %s, which is not a counter", n.Func.Name, vs.Name)
						}
					}
				}
			case "histogram_quantile":
				arg := n.Args[1]
				for {
					p, ok := arg.(*parser.ParenExpr)
					if !ok {
						break
					}
					arg = p.Expr
				}
				if agg, ok := arg.(*parser.AggregateExpr); ok && (agg.Without || !slices.Contains(agg.Grouping, "le")) {
					add("histogram_quantile over %s, which drops le", agg.Op)
				}
				parser.Inspect(arg, func(inner parser.Node, _ []parser.Node) error {
					if vs, ok := inner.(*parser.VectorSelector); ok && !set[vs.Name].bucket {
						add("histogram_quantile over %s, which is not a histogram's _bucket series", vs.Name)
					}
					return nil
				})
			case "label_replace", "label_join":
				add("%s: not supported by this check", n.Func.Name)
			}
		}
		return nil
	})
	return problems
}

// labelsUnder returns the union of the label names of the series selected under node.
func (set exportedSet) labelsUnder(node parser.Node) map[string]bool {
	out := map[string]bool{}
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			for l := range set[vs.Name].labels {
				out[l] = true
			}
		}
		return nil
	})
	return out
}

// TestCheck_Rejects shows the checker catches each kind of mistake, so that the
// dashboard and rule tests passing means something.
func TestCheck_Rejects(t *testing.T) {
	set := exportedSeries(t)
	tests := []struct {
		name string
		expr string
		want []string
	}{
		{name: "valid", expr: `sum by (model) (rate(gateway_requests_total{code=~"5.."}[5m]))`},
		{name: "valid quantile", expr: `histogram_quantile(0.9, sum by (le, tool) (rate(gateway_tool_duration_seconds_bucket[5m])))`},
		{name: "syntax error", expr: `sum(rate(gateway_requests_total[5m])`, want: []string{"parse"}},
		{name: "unknown metric", expr: `rate(gateway_request_total[5m])`, want: []string{"metric gateway_request_total is not exported"}},
		{name: "bare histogram name", expr: `rate(gateway_request_duration_seconds[5m])`, want: []string{"metric gateway_request_duration_seconds is not exported"}},
		{name: "label of another metric", expr: `gateway_tool_calls_total{model="x"}`, want: []string{"metric gateway_tool_calls_total has no label model"}},
		{name: "target label", expr: `gateway_inflight_requests{job="agate"}`, want: []string{"metric gateway_inflight_requests has no label job"}},
		{name: "grouping by a missing label", expr: `sum by (key) (rate(gateway_upstream_retries_total[5m]))`, want: []string{"sum groups by key"}},
		{name: "matching on a missing label", expr: `gateway_tokens_total / on (tool) gateway_requests_total`, want: []string{"vector matching on tool"}},
		{name: "rate over a gauge", expr: `rate(gateway_inflight_requests[5m])`, want: []string{"rate over gateway_inflight_requests, which is not a counter"}},
		{name: "quantile without le", expr: `histogram_quantile(0.9, sum by (model) (rate(gateway_time_to_first_token_seconds_bucket[5m])))`, want: []string{"histogram_quantile over sum, which drops le"}},
		{name: "quantile over a counter", expr: `histogram_quantile(0.9, sum by (le) (rate(gateway_requests_total[5m])))`, want: []string{"histogram_quantile over gateway_requests_total, which is not a histogram's _bucket series", "sum groups by le"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := set.check(tt.expr)
			// Compare by prefix: the messages go on with detail worth reading but not pinning.
			var trimmed []string
			for i, p := range got {
				if i < len(tt.want) && strings.HasPrefix(p, tt.want[i]) {
					p = tt.want[i]
				}
				trimmed = append(trimmed, p)
			}
			if diff := cmp.Diff(tt.want, trimmed); diff != "" {
				t.Errorf("check(%s) (-want +got):\n%s", tt.expr, diff)
			}
		})
	}
}
