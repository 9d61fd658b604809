package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/agate-gateway/agate/internal/gatewaytest"
)

const (
	dashboardPath = "../../deploy/grafana/agate.json"
	rulesPath     = "../../deploy/prometheus/alerts.yaml"
)

// dashboard is the part of a Grafana dashboard JSON model the tests read.
type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Datasource *datasource     `json:"datasource"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID          int         `json:"id"`
	Type        string      `json:"type"`
	Title       string      `json:"title"`
	Description string      `json:"description"`
	Datasource  *datasource `json:"datasource"`
	GridPos     struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
}

func loadDashboard(t testing.TB) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

// variableNames returns the dashboard's template variables.
func (d dashboard) variableNames() []string {
	var out []string
	for _, v := range d.Templating.List {
		out = append(out, v.Name)
	}
	return out
}

// namedExpr is one PromQL expression of the dashboard or the rules, with where it is.
type namedExpr struct {
	where string
	expr  string // plain PromQL: Grafana macros and variables already expanded
}

// dashboardExprs returns every panel query of the dashboard, expanded to plain PromQL.
func dashboardExprs(t testing.TB, d dashboard) []namedExpr {
	t.Helper()
	var out []namedExpr
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			e, err := expandGrafana(tg.Expr, d.variableNames())
			if err != nil {
				t.Errorf("panel %q target %s: %v", p.Title, tg.RefID, err)
				continue
			}
			out = append(out, namedExpr{where: fmt.Sprintf("panel %q %s", p.Title, tg.RefID), expr: e})
		}
	}
	return out
}

// labelValuesQuery is Grafana's Prometheus variable query label_values(selector, label).
var labelValuesQuery = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// rulesFile is the part of a Prometheus rule file the tests read.
type rulesFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func loadRules(t testing.TB) []rule {
	t.Helper()
	b, err := os.ReadFile(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	var f rulesFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", rulesPath, err)
	}
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// TestDashboardAndRules_NameOnlyExportedSeries parses every PromQL expression of the
// dashboard (panel queries and variable queries) and of the alert rules with the
// Prometheus parser and checks it names only series and labels Agate exports.
func TestDashboardAndRules_NameOnlyExportedSeries(t *testing.T) {
	set := exportedSeries(t)
	d := loadDashboard(t)
	exprs := dashboardExprs(t, d)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValuesQuery.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, v.Definition)
			continue
		}
		// The label must exist on the selected series: check it as a matcher.
		exprs = append(exprs, namedExpr{where: "variable " + v.Name, expr: m[1]},
			namedExpr{where: "variable " + v.Name + " label", expr: fmt.Sprintf(`%s{%s!=""}`, m[1], m[2])})
	}
	for _, r := range loadRules(t) {
		exprs = append(exprs, namedExpr{where: "alert " + r.Alert, expr: r.Expr})
	}
	if len(exprs) < 40 {
		t.Errorf("found %d expressions; the dashboard and rules have more (is the loader broken?)", len(exprs))
	}
	for _, e := range exprs {
		t.Run(e.where, func(t *testing.T) {
			if problems := set.check(e.expr); len(problems) > 0 {
				t.Errorf("%s:\n%s", e.expr, strings.Join(problems, "\n"))
			}
		})
	}
}

// TestDashboard_Shape checks what an import needs and a reader expects: a datasource
// variable every panel uses, the model, backend and key variables, a description on
// every panel, unique ids, a layout inside Grafana's 24 columns, and coverage of every
// metric Agate exports.
func TestDashboard_Shape(t *testing.T) {
	d := loadDashboard(t)
	const ds = "${DS_PROMETHEUS}"
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q title %q: both are needed for a stable import", d.UID, d.Title)
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name+":"+v.Type)
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != ds) {
			t.Errorf("variable %s does not query %s", v.Name, ds)
		}
	}
	if diff := cmp.Diff([]string{"DS_PROMETHEUS:datasource", "model:query", "backend:query", "key:query"}, vars); diff != "" {
		t.Errorf("template variables (-want +got):\n%s", diff)
	}
	ids := map[int]string{}
	used := map[string]bool{}
	for _, p := range d.Panels {
		if other, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside 24 columns", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if strings.TrimSpace(p.Description) == "" {
			t.Errorf("panel %q has no description", p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != ds {
			t.Errorf("panel %q datasource %+v, want uid %s", p.Title, p.Datasource, ds)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.RefID == "" || tg.Expr == "" {
				t.Errorf("panel %q: target without refId or expr", p.Title)
			}
			if tg.Datasource == nil || tg.Datasource.UID != ds {
				t.Errorf("panel %q target %s datasource %+v, want uid %s", p.Title, tg.RefID, tg.Datasource, ds)
			}
		}
	}
	// Every gateway_* metric appears in some panel.
	for _, e := range dashboardExprs(t, d) {
		ast, err := parser.NewParser(parser.Options{}).ParseExpr(e.expr)
		if err != nil {
			continue // reported by TestDashboardAndRules_NameOnlyExportedSeries
		}
		parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(vs.Name, "_bucket"), "_count"), "_sum")] = true
			}
			return nil
		})
	}
	for name := range exportedSeries(t) {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
		if strings.HasPrefix(base, "gateway_") && !used[base] {
			t.Errorf("no panel shows %s", base)
		}
	}
}

// templateLabel finds $labels.name references in alert annotations.
var templateLabel = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)

// TestAlertRules_Shape checks each rule is an alert with a severity, a summary and a
// description, and that its annotations only use labels its expression keeps.
func TestAlertRules_Shape(t *testing.T) {
	set := exportedSeries(t)
	rules := loadRules(t)
	var names []string
	for _, r := range rules {
		names = append(names, r.Alert)
		t.Run(r.Alert, func(t *testing.T) {
			if r.Alert == "" || r.Record != "" {
				t.Errorf("rule %q/%q: want alerting rules only", r.Alert, r.Record)
			}
			if s := r.Labels["severity"]; !slices.Contains([]string{"info", "warning", "critical"}, s) {
				t.Errorf("severity %q, want info, warning or critical", s)
			}
			for _, a := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("no %s annotation", a)
				}
			}
			kept := outputLabels(t, set, r.Expr)
			for _, text := range r.Annotations {
				for _, m := range templateLabel.FindAllStringSubmatch(text, -1) {
					if !kept[m[1]] {
						t.Errorf("an annotation uses $labels.%s, which %q does not keep", m[1], r.Expr)
					}
				}
			}
		})
	}
	want := []string{"AgateHighErrorRatio", "AgateErrorRatioCritical", "AgateHighLatencyP99", "AgateSlowTimeToFirstToken",
		"AgateUpstreamFailures", "AgateToolFailures", "AgateConfigReloadFailed", "AgateNoTraffic"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("alerts (-want +got):\n%s", diff)
	}
}

// outputLabels approximates the labels an alert expression's result keeps: the grouping
// labels when it aggregates, else the labels of the series it selects.
func outputLabels(t *testing.T, set exportedSet, expr string) map[string]bool {
	ast, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("parse %q: %v", expr, err)
	}
	kept := map[string]bool{}
	aggregates := false
	parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
		if a, ok := n.(*parser.AggregateExpr); ok {
			aggregates = true
			for _, l := range a.Grouping {
				kept[l] = l != "le"
			}
		}
		return nil
	})
	if !aggregates {
		kept = set.labelsUnder(ast)
	}
	return kept
}

// TestAlertRules_Promtool runs `promtool check rules` on the rule file.
func TestAlertRules_Promtool(t *testing.T) {
	promtool := gatewaytest.Require(t, "promtool", "apt-get install --no-install-recommends prometheus")
	out, err := exec.Command(promtool, "check", "rules", rulesPath).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", rulesPath, err, out)
	}
	if !strings.Contains(string(out), "SUCCESS") {
		t.Errorf("promtool check rules %s did not report SUCCESS:\n%s", rulesPath, out)
	}
}
