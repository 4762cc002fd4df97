package importer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/virtkit/virtkit/cdi/importer"
)

// A blank DataVolume: a sparse raw disk of the requested size, written
// under a temporary name and renamed into place.
func ExampleImporter_Import() {
	dir, _ := os.MkdirTemp("", "example-import-")
	defer os.RemoveAll(dir)
	im, err := importer.New(importer.Options{ScratchDir: filepath.Join(dir, "scratch")})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := im.Import(context.Background(), importer.Request{
		Blank:  true,
		Target: filepath.Join(dir, "dv", "default", "scratch.img"),
		Size:   64 << 20,
		Key:    "default-scratch",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	st, _ := os.Stat(filepath.Join(dir, "dv", "default", "scratch.img"))
	fmt.Println(res.SourceFormat, st.Size())
	// Output: raw 67108864
}
