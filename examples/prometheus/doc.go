// Package prometheus holds Prometheus rules and a scrape configuration for
// virtkit, with no Go API of its own:
//
//   - virtkit-rules.yaml: recording rules and alerts under KubeVirt's names
//     (VirtControllerDown, NoReadyVirtHandler, VMCannotBeEvicted,
//     KubeVirtVMIExcessiveMigrations, ...) with expressions over the series
//     virtkit's processes export;
//   - virtkit-rules_test.yaml: promtool unit tests that fire and resolve
//     every alert;
//   - prometheus.yml: the scrape jobs the rules expect (virtkit-controller,
//     virtkit-node).
//
// The package's tests run promtool on all three. test/prometheus runs a
// real Prometheus server with these rules against a running virtkit.
package prometheus
