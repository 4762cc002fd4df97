package cdi_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/virtkit/virtkit/cdi"
	"github.com/virtkit/virtkit/cdi/storage"
	"github.com/virtkit/virtkit/controller"
)

// Volume snapshots of a file-backed DataVolume on a shared class: the
// snapshot keeps the disk as it was, a restore makes a new volume of it.
func ExampleFileSnapshots() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "virtkit-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	classes := storage.Classes{List: []storage.Class{storage.SharedDir{Dir: dir}}}
	disk := classes.List[0].Path("", "default", "root")
	_ = os.MkdirAll(filepath.Dir(disk), 0o750)
	_ = os.WriteFile(disk, []byte("before"), 0o600)

	snaps := &cdi.FileSnapshots{Classes: classes}
	vol := controller.SnapshotVolume{Namespace: "default", Name: "root", StorageClass: storage.SharedClass}
	if err := snaps.Snapshot(ctx, vol, "snap-1"); err != nil {
		fmt.Println(err)
		return
	}
	_ = os.WriteFile(disk, []byte("after"), 0o600)

	restored := vol
	restored.Name = "root-restored"
	if err := snaps.Restore(ctx, "snap-1", restored); err != nil {
		fmt.Println(err)
		return
	}
	now, _ := os.ReadFile(disk)
	back, _ := os.ReadFile(classes.List[0].Path("", "default", "root-restored"))
	fmt.Printf("volume: %s, restored: %s\n", now, back)
	// Output: volume: after, restored: before
}
