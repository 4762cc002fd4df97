package domain

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/virtkit/virtkit"
)

// A containerPath volume shares a path of KubeVirt's launcher container
// with the guest by virtiofs, read-only. A virtkit node has no container:
// it reads the path on the host, only below a prefix of
// Options.ContainerPaths, and shares a copy of the directory's regular
// files taken when the domain starts, so the guest never writes to the
// host directory. Files changed on the host later (a rotated token) reach
// the guest at its next start.

// VolumeContainerPath is the kind of a containerPath volume's share.
const VolumeContainerPath VolumeKind = "containerPath"

// Limits of the copy of a containerPath directory.
const (
	maxContainerPathFiles = 1024
	maxContainerPathBytes = 64 << 20
)

// containerPath checks a containerPath volume against the node's policy
// and returns the resolved host directory. A refusal is recorded as the
// builder's error, wrapping ErrUnsupported and naming the field.
func (b *builder) containerPath(cp *virtkit.ContainerPathVolumeSource, path string) (string, bool) {
	if cp.ReadOnly != nil && !*cp.ReadOnly {
		b.unsupported(path+".readOnly", "write access to a containerPath volume is not supported")
		return "", false
	}
	dir, err := b.opts.ContainerPaths.Check(cp.Path)
	if err != nil {
		b.unsupported(path, fmt.Sprintf("a virtkit node has no launcher container; it shares host directories its containerPath policy allows: %v", err))
		return "", false
	}
	return dir, true
}

// containerPathFiles reads the regular files below the volume's directory
// (symbolic links and special files are skipped), bounded in number and
// size.
func (b *builder) containerPathFiles(cp *virtkit.ContainerPathVolumeSource, path string) ([]ConfigFile, bool) {
	dir, ok := b.containerPath(cp, path)
	if !ok {
		return nil, false
	}
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		b.fail(path+".path", "%v: %w", err, ErrNotResolved)
		return nil, false
	case !st.IsDir():
		b.fail(path+".path", "%s is not a directory: %w", dir, ErrNotResolved)
		return nil, false
	}
	var files []ConfigFile
	total := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := b.ctx.Err(); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		total += len(data)
		if len(files) >= maxContainerPathFiles || total > maxContainerPathBytes {
			return fmt.Errorf("more than %d files or %d bytes", maxContainerPathFiles, maxContainerPathBytes)
		}
		files = append(files, ConfigFile{Path: rel, Data: data})
		return nil
	})
	if err != nil {
		b.fail(path+".path", "reading %s: %v: %w", dir, err, ErrNotResolved)
		return nil, false
	}
	return files, true
}
