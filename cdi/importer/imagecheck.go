package importer

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrExternalReference: the image names a file outside itself (a backing
// file, an external data file). qemu-img would read that file with the
// importer's privileges and copy it into the tenant's disk, so such an
// image is refused whatever its format.
var ErrExternalReference = fmt.Errorf("%w: the image references a file outside itself", ErrBadSource)

// qcow2 header fields (docs/interop/qcow2.txt in QEMU).
const (
	qcow2IncompatDataFile = 1 << 2     // incompatible feature bit 2: external data file
	qcow2ExtDataFile      = 0x44415441 // header extension: external data file name
	qcow2MaxHeader        = 64 << 10   // the header and its extensions sit in the first cluster
)

// checkQcow2Header reads the qcow2 header of the file at p itself, as
// QEMU's qcow2 driver does, and refuses a backing file, the external data
// file feature and the header extensions that name other files. It does not
// trust qemu-img info: the same bytes decide what qemu-img convert opens.
func checkQcow2Header(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	hdr := make([]byte, qcow2MaxHeader)
	n, err := io.ReadFull(f, hdr)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return err
	}
	return qcow2References(hdr[:n])
}

// qcow2References checks a qcow2 header (the file's first bytes).
func qcow2References(hdr []byte) error {
	be := binary.BigEndian
	if len(hdr) < 72 || string(hdr[:4]) != "QFI\xfb" {
		return fmt.Errorf("%w: truncated qcow2 header", ErrNotADisk)
	}
	version := be.Uint32(hdr[4:])
	if backing := be.Uint64(hdr[8:]); backing != 0 {
		return fmt.Errorf("%w: qcow2 backing file (header offset %d)", ErrExternalReference, backing)
	}
	extStart := 72
	if version >= 3 {
		if len(hdr) < 104 {
			return fmt.Errorf("%w: truncated qcow2 v3 header", ErrNotADisk)
		}
		if be.Uint64(hdr[72:])&qcow2IncompatDataFile != 0 {
			return fmt.Errorf("%w: qcow2 external data file (%s)", ErrExternalReference, qcow2DataFileName(hdr, int(be.Uint32(hdr[100:]))))
		}
		extStart = int(be.Uint32(hdr[100:]))
	}
	for off := extStart; off+8 <= len(hdr); {
		typ, size := be.Uint32(hdr[off:]), int(be.Uint32(hdr[off+4:]))
		switch typ {
		case 0:
			return nil
		case qcow2ExtDataFile:
			return fmt.Errorf("%w: qcow2 external data file (%s)", ErrExternalReference, qcow2DataFileName(hdr, extStart))
		}
		off += 8 + (size+7)&^7
	}
	return nil
}

// qcow2DataFileName returns the data file name from the header extension,
// quoted and bounded, for an error message.
func qcow2DataFileName(hdr []byte, off int) string {
	be := binary.BigEndian
	for off >= 0 && off+8 <= len(hdr) {
		typ, size := be.Uint32(hdr[off:]), int(be.Uint32(hdr[off+4:]))
		if typ == 0 {
			break
		}
		if typ == qcow2ExtDataFile && off+8+size <= len(hdr) {
			return fmt.Sprintf("%.256q", hdr[off+8:off+8+size])
		}
		off += 8 + (size+7)&^7
	}
	return "name not recorded"
}

// externalReference reports what qemu-img info says the image refers to
// outside itself: a backing file, an external data file, or any child node
// other than the image's own file.
func (info ImageInfo) externalReference() string {
	switch {
	case info.BackingFile != "":
		return fmt.Sprintf("backing file %.256q", info.BackingFile)
	case info.FullBackingFile != "":
		return fmt.Sprintf("backing file %.256q", info.FullBackingFile)
	case info.FormatSpecific.Data.DataFile != "":
		return fmt.Sprintf("external data file %.256q", info.FormatSpecific.Data.DataFile)
	}
	for _, c := range info.Children {
		if c.Name != "file" {
			return fmt.Sprintf("child node %.64q", c.Name)
		}
	}
	return ""
}

// imageSpec is the json: pseudo-filename that opens the file at p with the
// format driver f on the file protocol only, with no backing file: qemu-img
// neither probes the format, nor parses protocol prefixes in p, nor opens a
// backing file whatever the header says.
func imageSpec(p string, f Format) string {
	spec := map[string]any{
		"driver": string(f),
		"file":   map[string]any{"driver": "file", "filename": p},
	}
	if f == FormatQcow2 {
		spec["backing"] = nil
	}
	b, _ := json.Marshal(spec) // maps of strings cannot fail
	return "json:" + string(b)
}
