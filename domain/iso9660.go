package domain

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"unicode/utf16"
)

// ISO9660 with a Joliet supplementary tree: the primary tree carries
// ISO level 2 upper-case names for readers that know nothing else; the
// Joliet tree carries the real names (user-data, meta_data.json, ...), which
// is what Linux (and so cloud-init) reads. Everything that could vary
// between runs (timestamps, order) is fixed, so the same files give the
// same image byte for byte.

const isoSector = 2048

// isoFile is one regular file of an image; Path uses '/' separators and
// may contain directories (openstack/latest/meta_data.json).
type isoFile struct {
	Path string
	Data []byte
}

type isoDir struct {
	name     string // the real name; "" for the root
	parent   *isoDir
	dirs     []*isoDir
	files    []*isoNode
	number   int // 1-based path-table number, per tree order
	extent   [2]uint32
	size     [2]uint32
	children []*isoNode // sorted, per tree (0 primary, 1 Joliet)
}

type isoNode struct {
	name   string
	dir    *isoDir // non-nil for directories
	data   []byte
	extent uint32 // file data location (shared by both trees)
	ids    [2][]byte
}

// writeISO writes an ISO9660 + Joliet image labelled volumeID with files.
func writeISO(w io.Writer, volumeID string, files []isoFile) error {
	if len(volumeID) == 0 || len(volumeID) > 16 {
		return fmt.Errorf("iso9660: volume label %q must be 1..16 characters", volumeID)
	}
	root := &isoDir{}
	seen := map[string]bool{}
	for _, f := range files {
		p := path.Clean(strings.TrimPrefix(f.Path, "/"))
		if p == "." || p == "" || strings.HasPrefix(p, "../") {
			return fmt.Errorf("iso9660: invalid file path %q", f.Path)
		}
		if seen[p] {
			return fmt.Errorf("iso9660: duplicate file %q", p)
		}
		seen[p] = true
		parts := strings.Split(p, "/")
		d := root
		for _, part := range parts[:len(parts)-1] {
			d = d.child(part)
		}
		name := parts[len(parts)-1]
		if len(name) > 64 {
			return fmt.Errorf("iso9660: file name %q longer than 64 characters", name)
		}
		d.files = append(d.files, &isoNode{name: name, data: f.Data})
	}

	// Directories in path-table order: breadth first, siblings sorted.
	var dirs []*isoDir
	queue := []*isoDir{root}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		dirs = append(dirs, d)
		d.number = len(dirs)
		sort.Slice(d.dirs, func(i, j int) bool { return d.dirs[i].name < d.dirs[j].name })
		queue = append(queue, d.dirs...)
	}
	for _, d := range dirs {
		var nodes []*isoNode
		for _, sub := range d.dirs {
			nodes = append(nodes, &isoNode{name: sub.name, dir: sub})
		}
		nodes = append(nodes, d.files...)
		if err := assignIdentifiers(nodes); err != nil {
			return err
		}
		for t := range 2 {
			sorted := append([]*isoNode(nil), nodes...)
			sort.SliceStable(sorted, func(i, j int) bool {
				return bytes.Compare(sorted[i].ids[t], sorted[j].ids[t]) < 0
			})
			d.children = append(d.children, sorted...) // both trees, split below
		}
	}

	// Layout: 16 system sectors, PVD, SVD, terminator, 4 path tables,
	// the directory extents of both trees, then file data.
	pt := [2][]byte{pathTable(dirs, 0, binary.LittleEndian), pathTable(dirs, 1, binary.LittleEndian)}
	ptSectors := [2]uint32{sectors(len(pt[0])), sectors(len(pt[1]))}
	next := uint32(19)
	var ptLoc [2][2]uint32 // [tree][L,M]
	for t := range 2 {
		ptLoc[t][0] = next
		next += ptSectors[t]
		ptLoc[t][1] = next
		next += ptSectors[t]
	}
	for t := range 2 {
		for _, d := range dirs {
			d.size[t] = dirSize(d, t)
			d.extent[t] = next
			next += d.size[t] / isoSector
		}
	}
	for _, d := range dirs {
		for _, f := range d.files {
			f.extent = next
			next += sectors(len(f.data))
		}
	}
	total := next

	// Now that extents are known, rebuild the path tables with them.
	var ptL, ptM [2][]byte
	for t := range 2 {
		ptL[t] = pathTable(dirs, t, binary.LittleEndian)
		ptM[t] = pathTable(dirs, t, binary.BigEndian)
	}

	img := make([]byte, int(total)*isoSector)
	for t := range 2 {
		vd := volumeDescriptor(t, volumeID, total, uint32(len(ptL[t])), ptLoc[t], root)
		copy(img[(16+t)*isoSector:], vd)
		copy(img[int(ptLoc[t][0])*isoSector:], ptL[t])
		copy(img[int(ptLoc[t][1])*isoSector:], ptM[t])
	}
	term := img[18*isoSector:]
	term[0] = 255
	copy(term[1:6], "CD001")
	term[6] = 1
	for t := range 2 {
		for _, d := range dirs {
			writeDir(img[int(d.extent[t])*isoSector:int(d.extent[t]+d.size[t]/isoSector)*isoSector], d, t)
		}
	}
	for _, d := range dirs {
		for _, f := range d.files {
			copy(img[int(f.extent)*isoSector:], f.data)
		}
	}
	_, err := w.Write(img)
	return err
}

func (d *isoDir) child(name string) *isoDir {
	for _, c := range d.dirs {
		if c.name == name {
			return c
		}
	}
	c := &isoDir{name: name, parent: d}
	d.dirs = append(d.dirs, c)
	return c
}

// nodes returns the children of d in tree t's order.
func (d *isoDir) nodes(t int) []*isoNode {
	n := len(d.children) / 2
	return d.children[t*n : (t+1)*n]
}

func sectors(n int) uint32 { return uint32((n + isoSector - 1) / isoSector) }

// assignIdentifiers gives every node its primary (ISO level 2, d-characters)
// and Joliet (UCS-2 big endian) identifier, keeping primary names unique.
func assignIdentifiers(nodes []*isoNode) error {
	used := map[string]bool{}
	for _, n := range nodes {
		base := primaryName(n.name, n.dir != nil)
		id := base
		for i := 1; used[id]; i++ {
			id = fmt.Sprintf("%s%d", strings.TrimSuffix(base, ".;1"), i)
			if n.dir == nil {
				id = primaryName(fmt.Sprintf("%s~%d", n.name, i), false)
			}
		}
		used[id] = true
		n.ids[0] = []byte(id)
		var j []byte
		for _, r := range utf16.Encode([]rune(n.name)) {
			j = append(j, byte(r>>8), byte(r))
		}
		n.ids[1] = j
	}
	return nil
}

// primaryName maps name to ISO9660 level 2: upper-case d-characters, one
// dot, ";1" version on files, at most 30 characters.
func primaryName(name string, dir bool) string {
	clean := func(s string) string {
		var b strings.Builder
		for _, r := range strings.ToUpper(s) {
			if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '_' {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
		return b.String()
	}
	if dir {
		s := clean(name)
		if len(s) > 31 {
			s = s[:31]
		}
		return s
	}
	stem, ext := name, ""
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		stem, ext = name[:i], name[i+1:]
	}
	stem, ext = clean(stem), clean(ext)
	if len(ext) > 8 {
		ext = ext[:8]
	}
	if len(stem)+len(ext) > 28 {
		stem = stem[:28-len(ext)]
	}
	return stem + "." + ext + ";1"
}

func recordLen(idLen int) int {
	n := 33 + idLen
	if n%2 == 1 {
		n++
	}
	return n
}

// dirSize is the size of d's extent in tree t; records never straddle sectors.
func dirSize(d *isoDir, t int) uint32 {
	used, secs := 0, 1
	add := func(n int) {
		if used+n > isoSector {
			secs++
			used = 0
		}
		used += n
	}
	add(recordLen(1))
	add(recordLen(1))
	for _, n := range d.nodes(t) {
		add(recordLen(len(n.ids[t])))
	}
	return uint32(secs * isoSector)
}

// isoEpoch is the fixed recording time of every record (1970-01-01 UTC).
var isoEpoch = [7]byte{70, 1, 1, 0, 0, 0, 0}

func putBoth32(b []byte, v uint32) {
	binary.LittleEndian.PutUint32(b, v)
	binary.BigEndian.PutUint32(b[4:], v)
}

func putBoth16(b []byte, v uint16) {
	binary.LittleEndian.PutUint16(b, v)
	binary.BigEndian.PutUint16(b[2:], v)
}

func dirRecord(id []byte, extent, size uint32, dir bool) []byte {
	r := make([]byte, recordLen(len(id)))
	r[0] = byte(len(r))
	putBoth32(r[2:], extent)
	putBoth32(r[10:], size)
	copy(r[18:25], isoEpoch[:])
	if dir {
		r[25] = 2
	}
	putBoth16(r[28:], 1)
	r[32] = byte(len(id))
	copy(r[33:], id)
	return r
}

func writeDir(buf []byte, d *isoDir, t int) {
	off := 0
	put := func(rec []byte) {
		if off%isoSector+len(rec) > isoSector {
			off = (off/isoSector + 1) * isoSector
		}
		copy(buf[off:], rec)
		off += len(rec)
	}
	parent := d.parent
	if parent == nil {
		parent = d
	}
	put(dirRecord([]byte{0}, d.extent[t], d.size[t], true))
	put(dirRecord([]byte{1}, parent.extent[t], parent.size[t], true))
	for _, n := range d.nodes(t) {
		if n.dir != nil {
			put(dirRecord(n.ids[t], n.dir.extent[t], n.dir.size[t], true))
		} else {
			put(dirRecord(n.ids[t], n.extent, uint32(len(n.data)), false))
		}
	}
}

func pathTable(dirs []*isoDir, t int, order binary.ByteOrder) []byte {
	var b []byte
	for _, d := range dirs {
		id := []byte{0}
		parent := 1
		if d.parent != nil {
			parent = d.parent.number
			for _, n := range d.parent.nodes(t) {
				if n.dir == d {
					id = n.ids[t]
				}
			}
		}
		e := make([]byte, 8+len(id)+len(id)%2)
		e[0] = byte(len(id))
		order.PutUint32(e[2:], d.extent[t])
		order.PutUint16(e[6:], uint16(parent))
		copy(e[8:], id)
		b = append(b, e...)
	}
	return b
}

// volumeDescriptor builds the primary (t=0) or Joliet (t=1) descriptor.
func volumeDescriptor(t int, label string, total, ptSize uint32, ptLoc [2]uint32, root *isoDir) []byte {
	vd := make([]byte, isoSector)
	text := func(off, n int, s string) {
		if t == 0 {
			copy(vd[off:off+n], []byte(s + strings.Repeat(" ", n))[:n])
			return
		}
		f := vd[off : off+n]
		for i := 0; i+1 < n; i += 2 {
			f[i], f[i+1] = 0, ' '
		}
		for i, r := range utf16.Encode([]rune(s)) {
			if 2*i+1 >= n {
				break
			}
			f[2*i], f[2*i+1] = byte(r>>8), byte(r)
		}
	}
	vd[0] = byte(1 + t)
	copy(vd[1:6], "CD001")
	vd[6] = 1
	text(8, 32, "LINUX")
	text(40, 32, label)
	putBoth32(vd[80:], total)
	if t == 1 {
		copy(vd[88:], "%/E") // Joliet UCS-2 level 3
	}
	putBoth16(vd[120:], 1)
	putBoth16(vd[124:], 1)
	putBoth16(vd[128:], isoSector)
	putBoth32(vd[132:], ptSize)
	binary.LittleEndian.PutUint32(vd[140:], ptLoc[0])
	binary.BigEndian.PutUint32(vd[148:], ptLoc[1])
	copy(vd[156:190], dirRecord([]byte{0}, root.extent[t], root.size[t], true))
	text(190, 128, "")
	text(318, 128, "")
	text(446, 128, "")
	text(574, 128, "VIRTKIT")
	text(702, 37, "")
	text(739, 37, "")
	text(776, 37, "")
	for _, off := range []int{813, 830, 847, 864} {
		copy(vd[off:off+16], "0000000000000000")
	}
	vd[881] = 1
	return vd
}
