// Package testnet serves loopback TCP for tests: a listener on 127.0.0.1
// whose connections a test's handler answers, closed when the test ends.
package testnet
