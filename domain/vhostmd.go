package domain

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// The downwardMetrics volume is a raw disk in vhostmd's on-disk format,
// which vm-dump-metrics and other vhostmd clients read in the guest: a
// 16-byte big-endian header (the signature "mvbd", a busy flag, the sum of
// the body's bytes and the body's length) followed by the metrics XML, in
// a file of VhostmdDiskSize bytes. A writer sets the busy flag, writes the
// body, then clears the flag, so a reader that sees the flag clear and a
// matching checksum has a whole document.

// VhostmdDiskSize is the size of a downward metrics disk, as KubeVirt
// creates it (256 KiB).
const VhostmdDiskSize = 256 << 10

// vhostmdHeaderSize is the header: signature, flag, checksum, length.
const vhostmdHeaderSize = 16

// MaxVhostmdBody bounds the metrics XML of one disk.
const MaxVhostmdBody = VhostmdDiskSize - 24

// ErrVhostmd marks a malformed or oversized downward metrics disk.
var ErrVhostmd = errors.New("vhostmd disk")

var vhostmdSignature = [4]byte{'m', 'v', 'b', 'd'}

// Metric contexts and value types of downward metrics.
const (
	MetricContextHost = "host"
	MetricContextVM   = "vm"

	MetricTypeString = "string"
	MetricTypeInt64  = "int64"
	MetricTypeUInt64 = "uint64"
	MetricTypeReal64 = "real64"
)

// Metrics is a downward metrics document: <metrics> with one <metric>
// element per value.
type Metrics struct {
	XMLName xml.Name `xml:"metrics"`
	Metrics []Metric `xml:"metric"`
}

// Metric is one downward metric: <metric type=".." context=".." unit="..">
// with <name> and a character-data <value>.
type Metric struct {
	Type    string      `xml:"type,attr"`
	Context string      `xml:"context,attr"`
	Unit    string      `xml:"unit,attr,omitempty"`
	Name    string      `xml:"name"`
	Value   metricValue `xml:"value"`
}

// metricValue keeps a value as character data, so that host names or
// versions with & or < read back verbatim.
type metricValue struct {
	Text string `xml:",cdata"`
}

// StringMetric, IntMetric, UintMetric and RealMetric make one metric of
// their type; a real is written with six decimals.
func StringMetric(ctxName, name, v string) Metric {
	return Metric{Type: MetricTypeString, Context: ctxName, Name: name, Value: metricValue{v}}
}

// IntMetric is a signed 64-bit metric.
func IntMetric(ctxName, name, unit string, v int64) Metric {
	return Metric{Type: MetricTypeInt64, Context: ctxName, Unit: unit, Name: name, Value: metricValue{strconv.FormatInt(v, 10)}}
}

// UintMetric is an unsigned 64-bit metric.
func UintMetric(ctxName, name, unit string, v uint64) Metric {
	return Metric{Type: MetricTypeUInt64, Context: ctxName, Unit: unit, Name: name, Value: metricValue{strconv.FormatUint(v, 10)}}
}

// RealMetric is a 64-bit floating-point metric.
func RealMetric(ctxName, name, unit string, v float64) Metric {
	return Metric{Type: MetricTypeReal64, Context: ctxName, Unit: unit, Name: name, Value: metricValue{strconv.FormatFloat(v, 'f', 6, 64)}}
}

// Text is the metric's value as written.
func (m Metric) Text() string { return m.Value.Text }

// Get returns the value of the metric called name, and whether there is one.
func (m Metrics) Get(name string) (string, bool) {
	for _, x := range m.Metrics {
		if x.Name == name {
			return x.Value.Text, true
		}
	}
	return "", false
}

// MarshalMetrics is the XML body of a disk: indented by two spaces and
// ending in a newline (vm-dump-metrics prints it as it is).
func MarshalMetrics(m Metrics) ([]byte, error) {
	body, err := xml.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	body = append(body, '\n')
	if len(body) > MaxVhostmdBody {
		return nil, fmt.Errorf("%w: metrics body of %d bytes exceeds %d", ErrVhostmd, len(body), MaxVhostmdBody)
	}
	return body, nil
}

func vhostmdHeader(flag int32, body []byte) []byte {
	var sum int32
	for _, c := range body {
		sum += int32(c)
	}
	var h [vhostmdHeaderSize]byte
	copy(h[:4], vhostmdSignature[:])
	binary.BigEndian.PutUint32(h[4:], uint32(flag))
	binary.BigEndian.PutUint32(h[8:], uint32(sum))
	binary.BigEndian.PutUint32(h[12:], uint32(len(body)))
	return h[:]
}

// WriteVhostmd writes m into a disk file opened for writing: busy header,
// body, then the header with the flag cleared. The file is grown to
// VhostmdDiskSize when shorter.
func WriteVhostmd(f *os.File, m Metrics) error {
	body, err := MarshalMetrics(m)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil {
		return err
	} else if fi.Size() < VhostmdDiskSize {
		if err := f.Truncate(VhostmdDiskSize); err != nil {
			return err
		}
	}
	if _, err := f.WriteAt(vhostmdHeader(1, body), 0); err != nil {
		return err
	}
	if _, err := f.WriteAt(body, vhostmdHeaderSize); err != nil {
		return err
	}
	if _, err := f.WriteAt(vhostmdHeader(0, body), 0); err != nil {
		return err
	}
	return nil
}

// ReadVhostmd decodes a downward metrics disk (the first VhostmdDiskSize
// bytes of r): an error wrapping ErrVhostmd when the signature, flag,
// length or checksum is wrong.
func ReadVhostmd(r io.ReaderAt) (Metrics, error) {
	var h [vhostmdHeaderSize]byte
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return Metrics{}, fmt.Errorf("%w: header: %v", ErrVhostmd, err)
	}
	if !bytes.Equal(h[:4], vhostmdSignature[:]) {
		return Metrics{}, fmt.Errorf("%w: signature %q is not mvbd", ErrVhostmd, h[:4])
	}
	if flag := int32(binary.BigEndian.Uint32(h[4:])); flag != 0 {
		return Metrics{}, fmt.Errorf("%w: busy (flag %d)", ErrVhostmd, flag)
	}
	n := int32(binary.BigEndian.Uint32(h[12:]))
	if n < 0 || n > MaxVhostmdBody {
		return Metrics{}, fmt.Errorf("%w: body length %d outside [0, %d]", ErrVhostmd, n, MaxVhostmdBody)
	}
	body := make([]byte, n)
	if _, err := r.ReadAt(body, vhostmdHeaderSize); err != nil {
		return Metrics{}, fmt.Errorf("%w: body: %v", ErrVhostmd, err)
	}
	if !bytes.Equal(vhostmdHeader(0, body), h[:]) {
		return Metrics{}, fmt.Errorf("%w: checksum mismatch", ErrVhostmd)
	}
	var m Metrics
	if err := xml.Unmarshal(body, &m); err != nil {
		return Metrics{}, fmt.Errorf("%w: %v", ErrVhostmd, err)
	}
	return m, nil
}
