// Package deploy holds Agate's operational artifacts, not code: the Grafana dashboard
// (grafana/agate.json) and the Prometheus alerting rules (prometheus/alerts.yaml). Its
// tests keep them honest: every PromQL expression parses and names only the metrics and
// labels Agate exports, promtool accepts the rules, and a real Prometheus scraping a real
// gateway evaluates every rule and every dashboard query and sees the traffic sent.
package deploy
