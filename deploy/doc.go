// Package deploy holds Agate's operational artifacts, not code: the Grafana dashboard
// (grafana/agate.json) and the Prometheus alerting rules (prometheus/alerts.yaml). The
// gateway's tests keep them honest (cmd/gateway/deploy_*_test.go: there, in a test binary
// that links the gateway anyway, rather than in a binary of this package's own, which
// would link it once more on every test run): every PromQL expression parses and names
// only the metrics and labels Agate exports, promtool accepts the rules, and a real
// Prometheus scraping a real gateway evaluates every rule and every dashboard query and
// sees the traffic sent.
package deploy
