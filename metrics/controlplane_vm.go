package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/virtkit/virtkit"
)

// vmFamilies are KubeVirt's per-VM families beyond kubevirt_vm_info.
type vmFamilies struct {
	requests, limits, labels, vnic, diskAllocated *family
	vmiVnic                                       *family
}

func newVMFamilies() vmFamilies {
	vnic := []string{"name", "namespace", "vnic_name", "binding_type", "network", "binding_name", "model"}
	return vmFamilies{
		requests: newFamily("kubevirt_vm_resource_requests", "Resources requested by Virtual Machine. Reports memory and CPU requests.", gauge,
			"name", "namespace", "resource", "unit", "source"),
		limits: newFamily("kubevirt_vm_resource_limits", "Resource limits set for a Virtual Machine. Reports CPU and memory limits only when they are defined.", gauge,
			"name", "namespace", "resource", "unit"),
		// kubevirt_vm_labels has one label per VM label: its Desc is built
		// per label-name set (labelDescs).
		labels: newFamily("kubevirt_vm_labels", "The VM's labels (and its template's) as Prometheus labels label_<key>.", gauge,
			"name", "namespace"),
		vnic: newFamily("kubevirt_vm_vnic_info", "Details of the vNIC interfaces defined in a Virtual Machine's template.", gauge, vnic...),
		diskAllocated: newFamily("kubevirt_vm_disk_allocated_size_bytes",
			"Allocated disk size of a Virtual Machine in bytes, from the claim of its dataVolume volumes.", gauge,
			"name", "namespace", "persistentvolumeclaim", "volume_mode", "device"),
		vmiVnic: newFamily("kubevirt_vmi_vnic_info", "Details of the vNIC interfaces of a VirtualMachineInstance.", gauge, vnic...),
	}
}

// vnicLabels returns, per interface with a matching network, KubeVirt's
// binding type, binding name, network and model.
func vnicSeries(ifaces []virtkit.Interface, networks []virtkit.Network, emit func(vnic, bindingType, network, bindingName, model string)) {
	for _, iface := range ifaces {
		network, ok := "", false
		for _, n := range networks {
			if n.Name != iface.Name {
				continue
			}
			switch {
			case n.Pod != nil:
				network, ok = "pod networking", true
			case n.Multus != nil:
				network, ok = n.Multus.NetworkName, true
			}
			break
		}
		if !ok {
			continue
		}
		bindingType, bindingName := "", ""
		switch {
		case iface.Masquerade != nil:
			bindingType, bindingName = "core", "masquerade"
		case iface.Bridge != nil:
			bindingType, bindingName = "core", "bridge"
		case iface.SRIOV != nil:
			bindingType, bindingName = "core", "sriov"
		case iface.Binding != nil:
			bindingType, bindingName = "plugin", iface.Binding.Name
		}
		model := iface.Model
		if model == "" {
			model = "<none>"
		}
		emit(iface.Name, bindingType, network, bindingName, model)
	}
}

// collectVMSpec writes the families read from a VM's template: resource
// requests and limits, vNICs, labels and dataVolume sizes.
func (c *ControlPlaneCollector) collectVMSpec(ch chan<- prometheus.Metric, vm *virtkit.VirtualMachine, dvs map[[2]string]*virtkit.DataVolume) {
	f := &c.f.vm
	c.collectVMLabels(ch, vm)
	t := vm.Spec.Template
	if t == nil {
		return
	}
	d := &t.Spec.Domain
	req := func(v float64, resource, unit, source string) {
		send(ch, f.requests, v, vm.Name, vm.Namespace, resource, unit, source)
	}
	if q, ok := d.Resources.Requests[virtkit.ResourceMemory]; ok && !q.IsZero() {
		req(float64(q.Value()), "memory", "bytes", "domain")
	}
	if m := d.Memory; m != nil {
		if m.Guest != nil && !m.Guest.IsZero() {
			req(float64(m.Guest.Value()), "memory", "bytes", "guest")
		}
		if m.Hugepages != nil {
			if q, err := parseQuantity(m.Hugepages.PageSize); err == nil {
				req(float64(q), "memory", "bytes", "hugepages")
			}
		}
	}
	if q := guestMemory(d); q > 0 {
		req(float64(q), "memory", "bytes", "guest_effective")
	}
	if l, ok := d.Resources.Limits[virtkit.ResourceMemory]; ok && !l.IsZero() {
		send(ch, f.limits, float64(l.Value()), vm.Name, vm.Namespace, "memory", "bytes")
	}
	if cpu := d.CPU; cpu != nil {
		if cpu.Cores != 0 {
			req(float64(cpu.Cores), "cpu", "cores", "domain")
		}
		if cpu.Threads != 0 {
			req(float64(cpu.Threads), "cpu", "threads", "domain")
		}
		if cpu.Sockets != 0 {
			req(float64(cpu.Sockets), "cpu", "sockets", "domain")
		}
	}
	if q, ok := d.Resources.Requests[virtkit.ResourceCPU]; ok && !q.IsZero() {
		req(float64(q.MilliValue())/1000, "cpu", "cores", "requests")
	} else if d.CPU == nil {
		req(1, "cpu", "cores", "default")
		req(1, "cpu", "threads", "default")
		req(1, "cpu", "sockets", "default")
	}
	req(float64(vcpusOf(d.CPU)), "cpu", "cores", "guest_effective")
	if l, ok := d.Resources.Limits[virtkit.ResourceCPU]; ok && !l.IsZero() {
		send(ch, f.limits, float64(l.MilliValue())/1000, vm.Name, vm.Namespace, "cpu", "cores")
	}

	vnicSeries(d.Devices.Interfaces, t.Spec.Networks, func(vnic, bt, network, bn, model string) {
		send(ch, f.vnic, 1, vm.Name, vm.Namespace, vnic, bt, network, bn, model)
	})

	for _, vol := range t.Spec.Volumes {
		var claim, mode string
		var size int64
		switch {
		case vol.DataVolume != nil:
			claim = vol.DataVolume.Name
			spec := dataVolumeClaim(vm, claim, dvs)
			if spec == nil {
				continue
			}
			if q, ok := spec.Resources.Requests[virtkit.ResourceStorage]; ok {
				size = q.Value()
			}
			if spec.VolumeMode != nil {
				mode = string(*spec.VolumeMode)
			}
		default:
			continue
		}
		send(ch, f.diskAllocated, float64(size), vm.Name, vm.Namespace, claim, mode, vol.Name)
	}
}

// dataVolumeClaim is the claim of a VM's dataVolume: its template in the
// VM, else the DataVolume object.
func dataVolumeClaim(vm *virtkit.VirtualMachine, name string, dvs map[[2]string]*virtkit.DataVolume) *virtkit.PersistentVolumeClaimSpec {
	claimOf := func(s *virtkit.DataVolumeSpec) *virtkit.PersistentVolumeClaimSpec {
		if s.PVC != nil {
			return s.PVC
		}
		return s.Storage
	}
	for i := range vm.Spec.DataVolumeTemplates {
		if t := &vm.Spec.DataVolumeTemplates[i]; t.ObjectMeta.Name == name {
			return claimOf(&t.Spec)
		}
	}
	if dv := dvs[[2]string{vm.Namespace, name}]; dv != nil {
		return claimOf(&dv.Spec)
	}
	return nil
}

// vcpusOf is sockets x cores x threads (each defaulting to 1).
func vcpusOf(cpu *virtkit.CPU) uint64 {
	if cpu == nil {
		return 1
	}
	n := uint64(1)
	for _, v := range []uint32{cpu.Sockets, cpu.Cores, cpu.Threads} {
		if v > 0 {
			n *= uint64(v)
		}
	}
	return n
}

// guestMemory is the memory the guest sees: memory.guest, else the
// memory request, else the limit.
func guestMemory(d *virtkit.DomainSpec) int64 {
	if d.Memory != nil && d.Memory.Guest != nil && !d.Memory.Guest.IsZero() {
		return d.Memory.Guest.Value()
	}
	if q, ok := d.Resources.Requests[virtkit.ResourceMemory]; ok && !q.IsZero() {
		return q.Value()
	}
	if q, ok := d.Resources.Limits[virtkit.ResourceMemory]; ok && !q.IsZero() {
		return q.Value()
	}
	return 0
}

// collectVMLabels writes kubevirt_vm_labels: the VM's labels with its
// template's on top... as KubeVirt merges them (template last), each as
// label_<key> with characters outside [a-zA-Z0-9_] replaced by '_'.
func (c *ControlPlaneCollector) collectVMLabels(ch chan<- prometheus.Metric, vm *virtkit.VirtualMachine) {
	merged := make(map[string]string, len(vm.Labels))
	for k, v := range vm.Labels {
		merged[k] = v
	}
	if t := vm.Spec.Template; t != nil {
		for k, v := range t.ObjectMeta.Labels {
			merged[k] = v
		}
	}
	if len(merged) == 0 {
		return
	}
	vl := labelsWithPrefix(merged, "label_")
	d := c.vmLabelDescs.get(c.f.vm.labels, &vl)
	values := append([]string{vm.Name, vm.Namespace}, vl.values...)
	if m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, 1, validValues(values)...); err == nil {
		ch <- m
	}
}

// needsDataVolumes reports whether a VM has a dataVolume volume whose claim
// is not templated in the VM itself.
func needsDataVolumes(vms []virtkit.VirtualMachine) bool {
	for i := range vms {
		vm := &vms[i]
		if vm.Spec.Template == nil {
			continue
		}
		for _, vol := range vm.Spec.Template.Spec.Volumes {
			if vol.DataVolume != nil && dataVolumeClaim(vm, vol.DataVolume.Name, nil) == nil {
				return true
			}
		}
	}
	return false
}
