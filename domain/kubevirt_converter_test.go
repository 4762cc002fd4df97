package domain_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

// kubevirtConverted is one line of testdata/kubevirt/converter.golden.jsonl:
// the domain KubeVirt's own converter (virt-launcher's, at the commit
// CONFORMANCE.md names) made from a testdata/vmi manifest after KubeVirt's
// mutating and validating webhooks, on an emulating node.
type kubevirtConverted struct {
	File    string `json:"file"`
	Allowed bool   `json:"allowed"`
	Domain  string `json:"domain"`
}

// domainFacts are the parts of a domain where virtkit follows KubeVirt's
// converter; the rest (paths, SMBIOS, PCI addresses) is virtkit's own.
type domainFacts struct {
	Machine     string
	Topology    string
	VCPUs       string // maximum/online
	Memory      uint
	IOThreads   uint
	Controllers []string
	Disks       []string
	Interfaces  []string
	Console     string
	Serial      string
	ACPI        bool
}

func factsOf(d *libvirtxml.Domain) domainFacts {
	var f domainFacts
	if d.OS != nil && d.OS.Type != nil {
		f.Machine = d.OS.Type.Machine
	}
	if d.CPU != nil && d.CPU.Topology != nil {
		t := d.CPU.Topology
		f.Topology = fmt.Sprintf("%d/%d/%d", t.Sockets, t.Cores, t.Threads)
	}
	if d.VCPU != nil {
		online := d.VCPU.Value
		if d.VCPU.Current != 0 {
			online = d.VCPU.Current
		}
		if d.VCPUs != nil {
			online = 0
			for _, v := range d.VCPUs.VCPU {
				if v.Enabled == "yes" {
					online++
				}
			}
		}
		f.VCPUs = fmt.Sprintf("%d/%d", d.VCPU.Value, online)
	}
	if d.Memory != nil {
		f.Memory = d.Memory.Value
	}
	f.IOThreads = d.IOThreads
	f.ACPI = d.Features != nil && d.Features.ACPI != nil
	for _, c := range d.Devices.Controllers {
		f.Controllers = append(f.Controllers, c.Type+"/"+c.Model)
	}
	for _, dk := range d.Devices.Disks {
		s := dk.Device
		if dk.Target != nil {
			s += " " + dk.Target.Bus + " " + dk.Target.Dev
			if dk.Target.Tray != "" {
				s += " tray=" + dk.Target.Tray
			}
		}
		if dk.Alias != nil {
			s += " " + dk.Alias.Name
		}
		if dk.Driver != nil && dk.Driver.IOThread != nil {
			s += fmt.Sprintf(" iothread=%d", *dk.Driver.IOThread)
		}
		if dk.ReadOnly != nil {
			s += " ro"
		}
		f.Disks = append(f.Disks, s)
	}
	for _, i := range d.Devices.Interfaces {
		s := ""
		if i.Alias != nil {
			s = i.Alias.Name
		}
		if i.Model != nil {
			s += " " + i.Model.Type
		}
		f.Interfaces = append(f.Interfaces, s)
	}
	for _, c := range d.Devices.Consoles {
		if c.Source != nil && c.Source.Pty != nil {
			f.Console = "pty"
		} else if c.Source != nil && c.Source.UNIX != nil {
			f.Console = "unix"
		}
	}
	for _, s := range d.Devices.Serials {
		if s.Source != nil && s.Source.UNIX != nil {
			f.Serial = "unix"
		}
	}
	return f
}

var ifaceSourceRE = regexp.MustCompile(`(?s)<source[^>]*>\s*</source>|<source[^>]*/>`)

// converterDifferences are the golden inputs on which virtkit's domain
// differs from KubeVirt's converter on purpose, and how; CONFORMANCE.md
// lists the same.
var converterDifferences = map[string]string{}

// TestBuildMatchesKubeVirtConverter builds each testdata/vmi manifest as a
// node does (SetDefaults, then Build) and compares the facts of the domain
// with KubeVirt's converter's domain for the same manifest.
func TestBuildMatchesKubeVirtConverter(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "kubevirt", "converter.golden.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	compared := 0
	for sc.Scan() {
		var kv kubevirtConverted
		require.NoError(t, json.Unmarshal(sc.Bytes(), &kv))
		if !kv.Allowed || !strings.HasPrefix(kv.Domain, "<domain") {
			continue // KubeVirt refuses it, or its converter needs a node's devices
		}
		name := strings.TrimSuffix(filepath.Base(kv.File), ".yaml")
		t.Run(name, func(t *testing.T) {
			// KubeVirt writes interface sources libvirtxml cannot read
			// back (a source with attributes of another type); they are
			// the node's business and not compared.
			var want libvirtxml.Domain
			require.NoError(t, want.Unmarshal(ifaceSourceRE.ReplaceAllString(kv.Domain, "")))
			vmi := decodeVMI(t, filepath.Join("testdata", "vmi", name+".yaml"))
			virtkit.SetDefaults(vmi)
			got, err := domain.Build(vmi, goldenOptions[name])
			require.NoError(t, err)
			w, g := factsOf(&want), factsOf(got)
			if why, ok := converterDifferences[name]; ok {
				assert.NotEqual(t, w, g, "%s agrees with KubeVirt's converter now: drop its difference (%s)", name, why)
				return
			}
			assert.Equal(t, w, g)
		})
		compared++
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, compared, 15)
}
