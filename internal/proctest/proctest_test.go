package proctest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLogHas(t *testing.T) {
	log := "level=INFO msg=\"leader elected\" leader=c2\nlevel=INFO msg=leading\n"
	for _, tc := range []struct {
		name  string
		parts []string
		want  bool
	}{
		{"all parts on one line", []string{"leader elected", "leader=c2"}, true},
		{"parts on different lines", []string{"leader elected", "msg=leading"}, false},
		{"absent", []string{"fenced"}, false},
		{"no parts matches any line", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, LogHas(log, tc.parts...))
		})
	}
}
