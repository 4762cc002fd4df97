// Package kubetest serves the control plane's API inside a test, over a
// store the test fills, and hands back the client the CLI's verbs take:
// the path `virtkit --store` runs, with no port and no certificates.
package kubetest
