package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BuildVirtkit builds the virtkit command into a new temporary directory
// named after prefix, with the compiler's output on stderr. cleanup
// removes the directory.
func BuildVirtkit(prefix string) (binary string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	binary = filepath.Join(dir, "virtkit")
	build := exec.Command("go", "build", "-o", binary, "github.com/virtkit/virtkit/cmd/virtkit")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building virtkit: %w", err)
	}
	return binary, cleanup, nil
}

// LogHas reports whether a line of log contains every one of parts.
func LogHas(log string, parts ...string) bool {
	for line := range strings.SplitSeq(log, "\n") {
		all := true
		for _, part := range parts {
			if !strings.Contains(line, part) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}
