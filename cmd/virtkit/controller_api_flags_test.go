package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A negative stream bound is refused naming the flag, and the controller
// does not start (0 is the server's default).
func TestControllerAPIStreamFlags(t *testing.T) {
	for _, tc := range []struct {
		flag, want string
	}{
		{"--api-max-streams=-1", "--api-max-streams: -1: must not be negative"},
		{"--api-max-streams-per-user=-3", "--api-max-streams-per-user: -3: must not be negative"},
		{"--api-max-watches-per-user=-2", "--api-max-watches-per-user: -2: must not be negative"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			_, errOut, code := virtkitProcess(t, "controller", "--nodes", "1", "--api-addr", "127.0.0.1:0",
				"--api-cert-dir", t.TempDir(), tc.flag)
			assert.NotEqual(t, 0, code)
			assert.Contains(t, errOut, tc.want)
		})
	}
}
