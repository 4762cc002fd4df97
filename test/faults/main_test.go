//go:build faults

package faults

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/virtkit/virtkit/internal/etcdproc"
	"github.com/virtkit/virtkit/internal/proctest"
)

var (
	// binary is the virtkit command built by TestMain ("" with -short).
	binary string
	// etcdBinary is the etcd server ("" when none was found).
	etcdBinary string
	// etcdMissing says why there is no etcd server binary.
	etcdMissing string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	if etcdBinary, err = etcdproc.FindBinary(root); err != nil {
		etcdMissing = err.Error()
		return m.Run() // every test skips (or fails under VIRTKIT_STRICT)
	}
	bin, cleanup, err := proctest.BuildVirtkit("virtkit-faults-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	defer cleanup()
	binary = bin
	return m.Run()
}
