// Package prometheus runs a real Prometheus server (Debian's prometheus
// package) on loopback with examples/prometheus/virtkit-rules.yaml, lets it
// scrape a running virtkit control plane (`virtkit demo --metrics-addr
// --hold`, a separate process), and checks through Prometheus's HTTP API
// that every query of the Grafana dashboard in examples/grafana returns
// data and that stopping the control plane fires VirtControllerDown.
//
// The tests build with the tag prometheus (hack/test.sh runs them) and are
// skipped when the prometheus binary is not installed or with -short.
package prometheus
