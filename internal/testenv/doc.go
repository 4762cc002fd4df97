// Package testenv decides whether a test that needs something outside Go
// (a Debian tool, a running libvirtd, root) runs, skips with a message that
// says how to run it, or fails because the full test command promised it.
//
// The full test command (hack/test.sh, which .ci/run calls) sets
// VIRTKIT_STRICT=1 after installing everything; under it a missing tool is a
// failure, not a skip, so CI cannot go green by skipping.
package testenv
