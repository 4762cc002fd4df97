// Package examples holds runnable programs that show virtkit in use; each
// subdirectory is one program and its test runs it. examples/grafana and
// examples/prometheus hold a dashboard and Prometheus rules instead, with
// tests that check them.
package examples
