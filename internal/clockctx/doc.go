// Package clockctx gives contexts whose timeouts run on an injected clock
// (k8s.io/utils/clock), so that a component on a virtual clock times out
// after virtual time, never after however much wall time its host machine
// happened to take.
package clockctx
