package metrics

import (
	"context"
	"encoding/xml"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// DomainXMLer returns a domain's live XML; hypervisor.Hypervisor
// satisfies it. When a NodeSource's Domains also implement it, the
// interface and drive labels carry the VMI's own interface and disk names
// (from the "ua-<name>" device aliases), as in KubeVirt; otherwise the
// host-side device name and disk target.
type DomainXMLer interface {
	XML(ctx context.Context, domain string) (string, error)
}

// userAliasPrefix marks device aliases set from VMI names (domain.Build).
const userAliasPrefix = "ua-"

// deviceNames maps a domain's host-side device names to the VMI's names.
type deviceNames struct {
	nics  map[string]string // target dev (vnet0) -> interface name
	disks map[string]string // target dev (vda) -> disk name
	// domainType is the libvirt domain type (qemu: software emulation).
	domainType string
	// affinity is the number of (vCPU, host CPU) pairs the vCPUs may run
	// on, when the hypervisor reports pinning (haveAffinity).
	affinity     int
	haveAffinity bool
}

// covers reports whether every device in the statistics is known, so a
// hot-plugged device triggers a fresh read of the XML.
func (d *deviceNames) covers(nics, disks []string) bool {
	for _, n := range nics {
		if _, ok := d.nics[n]; !ok {
			return false
		}
	}
	for _, n := range disks {
		if _, ok := d.disks[n]; !ok {
			return false
		}
	}
	return true
}

func (d *deviceNames) nic(dev string) string {
	if n, ok := d.nics[dev]; ok {
		return n
	}
	return dev
}

func (d *deviceNames) disk(dev string) string {
	if n, ok := d.disks[dev]; ok {
		return n
	}
	return dev
}

// parseDeviceNames reads interface and disk aliases from domain XML. A
// device without a "ua-" alias keeps its host-side name.
func parseDeviceNames(domainXML string) (*deviceNames, error) {
	type device struct {
		Target struct {
			Dev string `xml:"dev,attr"`
		} `xml:"target"`
		Alias struct {
			Name string `xml:"name,attr"`
		} `xml:"alias"`
	}
	var dom struct {
		Type    string `xml:"type,attr"`
		Devices struct {
			Interfaces []device `xml:"interface"`
			Disks      []device `xml:"disk"`
		} `xml:"devices"`
	}
	if err := xml.Unmarshal([]byte(domainXML), &dom); err != nil {
		return nil, err
	}
	name := func(d device) string {
		if n, ok := strings.CutPrefix(d.Alias.Name, userAliasPrefix); ok && n != "" {
			return n
		}
		return d.Target.Dev
	}
	out := &deviceNames{nics: map[string]string{}, disks: map[string]string{}, domainType: dom.Type}
	for _, d := range dom.Devices.Interfaces {
		if d.Target.Dev != "" {
			out.nics[d.Target.Dev] = name(d)
		}
	}
	for _, d := range dom.Devices.Disks {
		if d.Target.Dev != "" {
			out.disks[d.Target.Dev] = name(d)
		}
	}
	return out, nil
}

// deviceCache remembers each domain's device names per VMI incarnation
// (node, VMI UID): device aliases only change when the domain is
// redefined, so the XML is read once, not on every scrape.
type deviceCache struct {
	mu sync.Mutex
	m  map[deviceKey]*deviceNames
}

type deviceKey struct {
	node string
	uid  types.UID
}

func (c *deviceCache) get(k deviceKey) *deviceNames {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func (c *deviceCache) put(k deviceKey, d *deviceNames) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[deviceKey]*deviceNames{}
	}
	c.m[k] = d
}

// keep drops the entries of VMIs not in live.
func (c *deviceCache) keep(live map[deviceKey]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if !live[k] {
			delete(c.m, k)
		}
	}
}
