// Package promcheck runs `promtool check metrics` over an exposition and
// keeps only the findings that are defects: the lint findings that come
// from KubeVirt's own metric and label names, which virtkit keeps so
// KubeVirt's dashboards and alerts work unchanged, are dropped.
//
// Two findings are KubeVirt's:
//
//   - "counter metrics should have "_total" suffix" for the counters
//     KubeVirt names without it (the kubevirt_vm_*_status_last_transition_
//     timestamp_seconds family), listed in [KubeVirtCountersWithoutTotal];
//   - "label names should be written in 'snake_case' not 'camelCase'" for a
//     family whose only camelCase label names copy Kubernetes label keys
//     (kubernetes_vmi_label_<key>, label_<key>), as KubeVirt's do.
//
// Every other finding, and any parse error, is reported.
package promcheck
