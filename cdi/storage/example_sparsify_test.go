package storage_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/virtkit/virtkit/cdi/storage"
)

// A copy a hypervisor wrote with every block allocated (8 MiB, of which
// one byte is data) gets its zero chunks back as holes; its content and
// size stay.
func ExampleSparsify() {
	dir, err := os.MkdirTemp("", "virtkit-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	img := filepath.Join(dir, "copy.img")
	data := make([]byte, 8<<20)
	data[5<<20] = 1
	if err := os.WriteFile(img, data, 0o600); err != nil {
		fmt.Println(err)
		return
	}
	punched, err := storage.Sparsify(context.Background(), img)
	if err != nil {
		fmt.Println(err)
		return
	}
	after, _ := os.ReadFile(img)
	fmt.Printf("punched %d MiB; %d bytes, byte at 5 MiB: %d\n", punched>>20, len(after), after[5<<20])
	// Output: punched 7 MiB; 8388608 bytes, byte at 5 MiB: 1
}
