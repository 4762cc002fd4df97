package cdi_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/virtkit/virtkit/cdi"
	"github.com/virtkit/virtkit/cdi/storage"
)

// runningGuest stands in for a hypervisor's point-in-time copy of the disk
// of a running guest (on libvirt, hypervisor.DiskBackuper).
type runningGuest struct{ disk []byte }

func (g runningGuest) CopyInUse(_ context.Context, _ storage.SnapshotVolume, _, dst string) (bool, error) {
	return true, os.WriteFile(dst, g.disk, 0o600)
}

// The volume of a running guest is snapshotted through InUse, not read as
// a file: what the snapshot holds is the hypervisor's copy.
func ExampleFileSnapshots_inUse() {
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
	_ = os.WriteFile(disk, []byte("file as read now"), 0o600)

	snaps := &cdi.FileSnapshots{Classes: classes, InUse: runningGuest{disk: []byte("disk at one moment")}}
	vol := storage.SnapshotVolume{Namespace: "default", Name: "root", StorageClass: storage.SharedClass}
	if err := snaps.Snapshot(ctx, vol, "snap-1"); err != nil {
		fmt.Println(err)
		return
	}
	restored := vol
	restored.Name = "root-restored"
	if err := snaps.Restore(ctx, "snap-1", restored); err != nil {
		fmt.Println(err)
		return
	}
	back, _ := os.ReadFile(classes.List[0].Path("", "default", "root-restored"))
	fmt.Println(string(back))
	// Output: disk at one moment
}
