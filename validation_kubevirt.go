package virtkit

import (
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rules of this file follow KubeVirt's VMI admission for the machine
// type, paths inside container images, memory and dedicated CPUs.

// emulatedMachines are the machine type patterns KubeVirt accepts by
// default for each architecture (shell patterns, as in its
// emulatedMachines setting).
var emulatedMachines = map[string][]string{
	"amd64": {"q35*", "pc-q35*"},
	"arm64": {"virt*"},
	"s390x": {"s390-ccw-virtio*"},
}

func (v *vmiValidator) machine() {
	m := v.spec.Domain.Machine
	if m == nil || m.Type == "" {
		return
	}
	arch := v.spec.Architecture
	if arch == "" {
		arch = DefaultArchitecture
	}
	patterns, ok := emulatedMachines[arch]
	if !ok {
		return // the architecture is reported on its own
	}
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, m.Type); ok {
			return
		}
	}
	v.add(field.NotSupported(v.sp.Child("domain", "machine", "type"), m.Type, patterns))
}

// absolutePath checks a path inside a container image as KubeVirt does:
// absolute, without . or .. components, and not the root itself.
func absolutePath(p string, fp *field.Path) *field.Error {
	if p == "/" {
		return field.Invalid(fp, p, "must not point to root")
	}
	if path.Join("/", p) != strings.TrimSuffix(p, "/") {
		return field.Invalid(fp, p, "must be an absolute path to a file without relative components")
	}
	return nil
}

// memoryRequired is rule 16, which KubeVirt applies to VMIs only: a VM's
// or a replica set's template may leave memory to the VMI's defaults (an
// instancetype, in KubeVirt).
func memoryRequired(spec *VirtualMachineInstanceSpec, sp *field.Path) field.ErrorList {
	dom := &spec.Domain
	if q, ok := dom.Resources.Requests[ResourceMemory]; ok && !q.IsZero() {
		return nil
	}
	if dom.Memory != nil && (dom.Memory.Guest != nil || dom.Memory.Hugepages != nil) {
		return nil
	}
	return field.ErrorList{field.Required(sp.Child("domain", "resources", "requests", string(ResourceMemory)),
		"no memory requested, at least one of 'spec.domain.memory.guest', 'spec.domain.memory.hugepages.pageSize' or 'spec.domain.resources.requests.memory' must be set")}
}

// dedicatedCPUs checks a dedicated CPU placement as KubeVirt does: whole
// CPUs, request equal to limit for CPU and memory, and a topology that
// matches the CPU request or limit. KubeVirt reports the topology
// problems at cpu.dedicatedCpuPlacement.
func (v *vmiValidator) dedicatedCPUs(cpu *CPU, cp *field.Path) {
	res := v.spec.Domain.Resources
	rp := v.sp.Child("domain", "resources")
	dp := cp.Child("dedicatedCpuPlacement")
	req, lim := res.Requests[ResourceCPU], res.Limits[ResourceCPU]
	reqMem, limMem := res.Requests[ResourceMemory], res.Limits[ResourceMemory]
	if m := v.spec.Domain.Memory; limMem.IsZero() && reqMem.IsZero() && (m == nil || (m.Hugepages == nil && (m.Guest == nil || m.Guest.IsZero()))) {
		v.add(field.Invalid(rp.Child("limits", string(ResourceMemory)), "", "dedicated CPU placement needs memory: requests.memory, limits.memory, memory.hugepages or memory.guest"))
	}
	if req.Value() > 0 && req.Value()*1000 != req.MilliValue() {
		v.add(field.Invalid(rp.Child("requests", string(ResourceCPU)), req.String(), "dedicated CPU placement needs whole CPUs"))
	}
	if lim.Value() > 0 && lim.Value()*1000 != lim.MilliValue() {
		v.add(field.Invalid(rp.Child("limits", string(ResourceCPU)), lim.String(), "dedicated CPU placement needs whole CPUs"))
	}
	if reqMem.Value() > 0 && limMem.Value() > 0 && reqMem.Value() != limMem.Value() {
		v.add(field.Invalid(rp.Child("requests", string(ResourceMemory)), reqMem.String(), "dedicated CPU placement needs the memory request to equal the limit"))
	}
	vcpus := vcpuCount(cpu)
	switch {
	case req.Value() == 0 && lim.Value() == 0 && vcpus == 0:
		v.add(field.Invalid(dp, true, "dedicated CPU placement needs requests.cpu, limits.cpu or cpu.cores"))
	case req.Value() > 0 && lim.Value() > 0 && req.Value() != lim.Value():
		v.add(field.Invalid(dp, true, "dedicated CPU placement needs the cpu request to equal the limit"))
	}
	if (req.Value() > 0 || lim.Value() > 0) && vcpus > 0 && req.Value() != vcpus && lim.Value() != vcpus {
		v.add(field.Invalid(dp, true, fmt.Sprintf("the CPU topology gives %d vCPUs, which matches neither requests.cpu nor limits.cpu", vcpus)))
	}
	if cpu.Threads > 2 {
		v.add(field.Invalid(dp, true, fmt.Sprintf("dedicated CPU placement supports at most 2 threads per core, got %d", cpu.Threads)))
	}
}

// vcpuCount is sockets × cores × threads, counting only the fields set.
func vcpuCount(cpu *CPU) int64 {
	n := int64(0)
	for _, f := range []uint32{cpu.Cores, cpu.Sockets, cpu.Threads} {
		switch {
		case f == 0:
		case n == 0:
			n = int64(f)
		default:
			n *= int64(f)
		}
	}
	return n
}
