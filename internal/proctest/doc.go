// Package proctest holds what the suites that run virtkit as separate
// processes (test/e2e, test/faults) share: building the virtkit command
// once per test binary and reading the processes' logs.
package proctest
