package virtkit

import (
	"encoding/base64"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks obj against KubeVirt's admission rules for the kinds and
// fields virtkit supports (each rule numbered in the
// comments below) and returns every problem with its full path from the
// object root. It does not default; call SetDefaults first, as KubeVirt's
// webhooks do. Objects of foreign types give one error.
func Validate(obj Object) field.ErrorList {
	switch t := obj.(type) {
	case *VirtualMachineInstance:
		errs := validateObjectMeta(&t.ObjectMeta, true, field.NewPath("metadata"))
		errs = append(errs, validateVMISpecOf(&t.Spec, field.NewPath("spec"), true)...)
		return append(errs, memoryRequired(&t.Spec, field.NewPath("spec"))...)
	case *VirtualMachine:
		return validateVM(t)
	case *VirtualMachineInstanceReplicaSet:
		return validateReplicaSet(t)
	case *VirtualMachineInstanceMigration:
		return validateMigration(t)
	case *MigrationPolicy:
		return validateMigrationPolicy(t)
	case *Node:
		return validateNode(t)
	case *DataVolume:
		return validateDataVolume(t)
	case *Event:
		return validateEvent(t)
	case *NetworkAttachmentDefinition:
		return validateNetworkAttachmentDefinition(t)
	case *IPLease:
		return validateIPLease(t)
	case *corev1.ConfigMap:
		return validateConfigMap(t)
	case *corev1.Secret:
		return validateSecret(t)
	case *corev1.ServiceAccount:
		return validateServiceAccount(t)
	case *VirtualMachineInstancetype:
		return validateInstancetype(&t.ObjectMeta, true, &t.Spec)
	case *VirtualMachineClusterInstancetype:
		return validateInstancetype(&t.ObjectMeta, false, &t.Spec)
	case *VirtualMachinePreference:
		return validatePreference(&t.ObjectMeta, true, &t.Spec)
	case *VirtualMachineClusterPreference:
		return validatePreference(&t.ObjectMeta, false, &t.Spec)
	case *ControllerRevision:
		return validateControllerRevision(t)
	case *VirtualMachineSnapshot:
		return validateSnapshot(t)
	case *VirtualMachineSnapshotContent:
		return validateSnapshotContent(t)
	case *VirtualMachineRestore:
		return validateRestore(t)
	case *VirtualMachineClone:
		return validateClone(t)
	case *KubeVirt:
		return validateKubeVirt(t)
	case nil:
		return field.ErrorList{field.Required(nil, "no object")}
	}
	return field.ErrorList{field.NotSupported(field.NewPath("kind"), fmt.Sprintf("%T", obj), knownKindNames())}
}

func knownKindNames() []string {
	var out []string
	for _, k := range kinds() {
		out = append(out, k.gvk.Kind)
	}
	return out
}

func validateObjectMeta(meta *metav1.ObjectMeta, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case meta.Name == "" && meta.GenerateName == "":
		errs = append(errs, field.Required(p.Child("name"), "name or generateName is required"))
	case meta.Name != "":
		for _, msg := range validation.IsDNS1123Subdomain(meta.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), meta.Name, msg))
		}
	}
	if meta.Namespace != "" {
		if !namespaced {
			errs = append(errs, field.Forbidden(p.Child("namespace"), "not allowed on this cluster-scoped kind"))
		} else {
			for _, msg := range validation.IsDNS1123Label(meta.Namespace) {
				errs = append(errs, field.Invalid(p.Child("namespace"), meta.Namespace, msg))
			}
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(meta.Labels, p.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(meta.Annotations, p.Child("annotations"))...)
	errs = append(errs, apivalidation.ValidateFinalizers(meta.Finalizers, p.Child("finalizers"))...)
	return errs
}

// Rule 41: a VM sets exactly one of running / runStrategy, to a valid value.
func validateVM(vm *VirtualMachine) field.ErrorList {
	errs := validateObjectMeta(&vm.ObjectMeta, true, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	switch {
	case vm.Spec.Running != nil && vm.Spec.RunStrategy != nil:
		errs = append(errs, field.Invalid(sp.Child("running"), *vm.Spec.Running,
			"running and runStrategy are mutually exclusive; use runStrategy"))
	case vm.Spec.Running == nil && vm.Spec.RunStrategy == nil:
		// KubeVirt reports the missing choice at spec.running.
		errs = append(errs, field.Required(sp.Child("running"), "runStrategy must be specified"))
	case vm.Spec.RunStrategy != nil:
		rs := *vm.Spec.RunStrategy
		valid := []VirtualMachineRunStrategy{RunStrategyHalted, RunStrategyManual, RunStrategyAlways, RunStrategyRerunOnFailure, RunStrategyOnce}
		if rs == RunStrategyWaitAsReceiver {
			e := field.NotSupported(sp.Child("runStrategy"), rs, valid)
			e.Detail = "WaitAsReceiver needs decentralized live migration, which virtkit does not implement; " + e.Detail
			errs = append(errs, e)
		} else if !slices.Contains(valid, rs) {
			errs = append(errs, field.NotSupported(sp.Child("runStrategy"), rs, valid))
		}
	}
	if vm.Spec.Template == nil {
		errs = append(errs, field.Required(sp.Child("template"), "a VM needs a template"))
	} else {
		tp := sp.Child("template")
		errs = append(errs, metav1validation.ValidateLabels(vm.Spec.Template.ObjectMeta.Labels, tp.Child("metadata", "labels"))...)
		errs = append(errs, apivalidation.ValidateAnnotations(vm.Spec.Template.ObjectMeta.Annotations, tp.Child("metadata", "annotations"))...)
		// As KubeVirt's admission does, check the template as the VMIs
		// made from it will be: defaulted (on a copy; SetDefaults sets
		// only what KubeVirt's VM mutator sets).
		tmpl := vm.Spec.Template.Spec.DeepCopy()
		DefaultOptions{}.setVMISpecDefaults(tmpl, nil)
		errs = append(errs, validateVMISpec(tmpl, tp.Child("spec"))...)
	}
	errs = append(errs, validateVMMatchers(vm)...)
	seen := map[string]bool{}
	for i, dv := range vm.Spec.DataVolumeTemplates {
		p := sp.Child("dataVolumeTemplates").Index(i)
		name := dv.ObjectMeta.Name
		if name == "" {
			errs = append(errs, field.Required(p.Child("metadata", "name"), "a DataVolume template needs a name"))
		} else if seen[name] {
			errs = append(errs, field.Duplicate(p.Child("metadata", "name"), name))
		}
		seen[name] = true
		errs = append(errs, validateDataVolumeSpec(&dv.Spec, p.Child("spec"))...)
	}
	return errs
}

// Rule 41 (VMIRS): selector required and matching the template's labels.
func validateReplicaSet(rs *VirtualMachineInstanceReplicaSet) field.ErrorList {
	errs := validateObjectMeta(&rs.ObjectMeta, true, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	if rs.Spec.Replicas != nil && *rs.Spec.Replicas < 0 {
		errs = append(errs, field.Invalid(sp.Child("replicas"), *rs.Spec.Replicas, "must be greater than or equal to 0"))
	}
	var selector labels.Selector
	if rs.Spec.Selector == nil {
		errs = append(errs, field.Required(sp.Child("selector"), "a replica set needs a selector"))
	} else {
		serrs := metav1validation.ValidateLabelSelector(rs.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, sp.Child("selector"))
		errs = append(errs, serrs...)
		if len(serrs) == 0 {
			s, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
			switch {
			case err != nil:
				errs = append(errs, field.Invalid(sp.Child("selector"), rs.Spec.Selector, err.Error()))
			case s.Empty():
				errs = append(errs, field.Invalid(sp.Child("selector"), rs.Spec.Selector, "an empty selector would select every VMI"))
			default:
				selector = s
			}
		}
	}
	if rs.Spec.Template == nil {
		return append(errs, field.Required(sp.Child("template"), "a replica set needs a template"))
	}
	tp := sp.Child("template")
	tl := rs.Spec.Template.ObjectMeta.Labels
	if len(tl) == 0 {
		errs = append(errs, field.Required(tp.Child("metadata", "labels"), "the template needs labels for the selector to match"))
	} else {
		errs = append(errs, metav1validation.ValidateLabels(tl, tp.Child("metadata", "labels"))...)
		if selector != nil && !selector.Matches(labels.Set(tl)) {
			errs = append(errs, field.Invalid(sp.Child("selector"), rs.Spec.Selector, "selector does not match labels."))
		}
	}
	return append(errs, validateVMISpec(&rs.Spec.Template.Spec, tp.Child("spec"))...)
}

func validateMigration(m *VirtualMachineInstanceMigration) field.ErrorList {
	errs := validateObjectMeta(&m.ObjectMeta, true, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	if m.Spec.VMIName == "" {
		errs = append(errs, field.Required(sp.Child("vmiName"), "the VMI to migrate"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(m.Spec.VMIName) {
			errs = append(errs, field.Invalid(sp.Child("vmiName"), m.Spec.VMIName, msg))
		}
	}
	if p := m.Spec.Priority; p != nil {
		valid := []MigrationPriority{PrioritySystemCritical, PriorityUserTriggered, PrioritySystemMaintenance}
		if !slices.Contains(valid, *p) {
			errs = append(errs, field.NotSupported(sp.Child("priority"), *p, valid))
		}
	}
	for k, v := range m.Spec.AddedNodeSelector {
		errs = append(errs, validateLabelPair(k, v, sp.Child("addedNodeSelector").Key(k))...)
	}
	return errs
}

func validateMigrationPolicy(mp *MigrationPolicy) field.ErrorList {
	errs := validateObjectMeta(&mp.ObjectMeta, false, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	// KubeVirt's CRD schema requires spec.selectors (the API server checks
	// it before KubeVirt's webhook, which does not).
	if mp.Spec.Selectors == nil {
		errs = append(errs, field.Required(sp.Child("selectors"), "a migration policy needs selectors"))
	} else {
		for k, v := range mp.Spec.Selectors.NamespaceSelector {
			errs = append(errs, validateLabelPair(k, v, sp.Child("selectors", "namespaceSelector").Key(k))...)
		}
		for k, v := range mp.Spec.Selectors.VirtualMachineInstanceSelector {
			errs = append(errs, validateLabelPair(k, v, sp.Child("selectors", "virtualMachineInstanceSelector").Key(k))...)
		}
	}
	if q := mp.Spec.BandwidthPerMigration; q != nil && q.Sign() < 0 {
		errs = append(errs, field.Invalid(sp.Child("bandwidthPerMigration"), q.String(), "must not be negative"))
	}
	if c := mp.Spec.CompletionTimeoutPerGiB; c != nil && *c < 0 {
		errs = append(errs, field.Invalid(sp.Child("completionTimeoutPerGiB"), *c, "must not be negative"))
	}
	if d := mp.Spec.MaxDowntimeMs; d != nil && (*d < 1 || *d > 2000000) {
		errs = append(errs, field.Invalid(sp.Child("maxDowntimeMs"), *d, "must be between 1 and 2000000"))
	}
	return errs
}

func validateNode(n *Node) field.ErrorList {
	errs := validateObjectMeta(&n.ObjectMeta, false, field.NewPath("metadata"))
	// A node's name is a DNS-1123 label: it becomes a label value
	// (kubevirt.io/nodeName), a host name and a column in printed tables.
	if n.Name != "" && len(validation.IsDNS1123Subdomain(n.Name)) == 0 {
		for _, msg := range validation.IsDNS1123Label(n.Name) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), n.Name, msg))
		}
	}
	sp := field.NewPath("spec")
	effects := []TaintEffect{TaintEffectNoSchedule, TaintEffectPreferNoSchedule, TaintEffectNoExecute}
	for i, t := range n.Spec.Taints {
		p := sp.Child("taints").Index(i)
		if t.Key == "" {
			errs = append(errs, field.Required(p.Child("key"), ""))
		} else {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		if !slices.Contains(effects, t.Effect) {
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, effects))
		}
	}
	st := field.NewPath("status")
	errs = append(errs, validateResourceList(n.Status.Capacity, st.Child("capacity"))...)
	errs = append(errs, validateResourceList(n.Status.Allocatable, st.Child("allocatable"))...)
	return errs
}

func validateLabelPair(k, v string, p *field.Path) field.ErrorList {
	return metav1validation.ValidateLabels(map[string]string{k: v}, p)
}

func validateResourceList(list ResourceList, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedResourceNames(list) {
		q := list[name]
		if name != ResourceCPU && name != ResourceMemory {
			errs = append(errs, field.NotSupported(p.Child(string(name)), name, []ResourceName{ResourceCPU, ResourceMemory}))
			continue
		}
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p.Child(string(name)), q.String(), "must be greater than or equal to 0"))
		}
		errs = append(errs, validateQuantityRange(name, q, p.Child(string(name)))...)
	}
	return errs
}

func sortedResourceNames(list ResourceList) []ResourceName {
	names := make([]ResourceName, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func countSet(b ...bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

// vmiValidator carries the cross-references of one VMI spec.
//
// +kubebuilder:object:generate=false
// +k8s:openapi-gen=false
type vmiValidator struct {
	spec    *VirtualMachineInstanceSpec
	sp      *field.Path
	errs    field.ErrorList
	volumes map[string]*Volume
	// bootOrders maps a boot order to the first device path using it.
	bootOrders map[uint]string
	// isVMI: the spec is a VMI's, not a template's.
	isVMI bool
}

func (v *vmiValidator) add(errs ...*field.Error) { v.errs = append(v.errs, errs...) }

// validateVMISpec checks the VMI spec of a template.
func validateVMISpec(spec *VirtualMachineInstanceSpec, sp *field.Path) field.ErrorList {
	return validateVMISpecOf(spec, sp, false)
}

// validateVMISpecOf checks a VMI spec; isVMI adds the rules KubeVirt
// applies to VMIs only (every volume used by a disk).
func validateVMISpecOf(spec *VirtualMachineInstanceSpec, sp *field.Path, isVMI bool) field.ErrorList {
	v := &vmiValidator{spec: spec, sp: sp, volumes: map[string]*Volume{}, bootOrders: map[uint]string{}, isVMI: isVMI}
	v.architecture()
	v.machine()
	v.volumesAndDisks()
	v.resources()
	v.cpu()
	v.firmware()
	v.features()
	v.clock()
	v.networks()
	v.inputs()
	v.probesAndStart()
	v.scheduling()
	v.hostnameAndDNS()
	v.hostDependent()
	if es := spec.EvictionStrategy; es != nil {
		valid := []EvictionStrategy{EvictionStrategyNone, EvictionStrategyLiveMigrate, EvictionStrategyLiveMigrateIfPossible, EvictionStrategyExternal}
		if !slices.Contains(valid, *es) { // rule 36
			v.add(field.NotSupported(sp.Child("evictionStrategy"), *es, valid))
		}
	}
	// A negative terminationGracePeriodSeconds is accepted, as KubeVirt
	// accepts it: the guest is stopped at once.
	return v.errs
}

// Rule 40.
func (v *vmiValidator) architecture() {
	valid := []string{"amd64", "arm64", "s390x"}
	if a := v.spec.Architecture; a != "" && !slices.Contains(valid, a) {
		v.add(field.NotSupported(v.sp.Child("architecture"), a, valid))
	}
}

var (
	pciAddressRE = regexp.MustCompile(`^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`)
	diskSerialRE = regexp.MustCompile(`^[A-Za-z0-9_.+-]+$`)
)

const (
	maxDiskSerialLength   = 256
	maxCloudInitDataBytes = 2048
	maxVolumes            = 256
)

// Rules 1-15, 32, 33.
func (v *vmiValidator) volumesAndDisks() {
	spec, sp := v.spec, v.sp
	volPath := sp.Child("volumes")
	diskPath := sp.Child("domain", "devices", "disks")
	if len(spec.Volumes) > maxVolumes {
		v.add(field.TooMany(volPath, len(spec.Volumes), maxVolumes))
	}
	for i := range spec.Volumes {
		vol := &spec.Volumes[i]
		p := volPath.Index(i)
		if vol.Name == "" {
			v.add(field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Label(vol.Name) {
				v.add(field.Invalid(p.Child("name"), vol.Name, msg))
			}
			if _, dup := v.volumes[vol.Name]; dup { // rule 4
				v.add(field.Duplicate(p.Child("name"), vol.Name))
			} else {
				v.volumes[vol.Name] = vol
			}
		}
		v.volumeSource(vol, p)
	}
	v.serviceAccountVolumes(volPath)
	v.downwardMetricsVolumes(volPath)
	disks := map[string]bool{}
	for i := range spec.Domain.Devices.Disks {
		d := &spec.Domain.Devices.Disks[i]
		p := diskPath.Index(i)
		if d.Name == "" {
			v.add(field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Label(d.Name) { // rule 3
				v.add(field.Invalid(p.Child("name"), d.Name, msg))
			}
			if disks[d.Name] {
				v.add(field.Duplicate(p.Child("name"), d.Name))
			}
			disks[d.Name] = true
			// Rule 2; a CD-ROM may have no volume: an empty drive that a
			// volume is inserted into later (KubeVirt's declarative hotplug).
			if _, ok := v.volumes[d.Name]; !ok && (d.CDRom == nil || d.Disk != nil || d.LUN != nil) {
				v.add(field.NotFound(p.Child("name"), d.Name))
			}
		}
		v.disk(d, p)
	}
	shared := v.filesystems(disks)
	v.watchdog()
	v.video()
	for i, vol := range spec.Volumes { // rule 1, on VMIs only
		if v.isVMI && vol.Name != "" && !disks[vol.Name] && !shared[vol.Name] {
			v.add(field.NotFound(volPath.Index(i).Child("name"), vol.Name))
		}
	}
}

func (v *vmiValidator) volumeSource(vol *Volume, p *field.Path) {
	s := vol.VolumeSource
	n := countSet(s.HostDisk != nil, s.PersistentVolumeClaim != nil, s.CloudInitNoCloud != nil, s.CloudInitConfigDrive != nil,
		s.ContainerDisk != nil, s.Ephemeral != nil, s.EmptyDisk != nil, s.DataVolume != nil,
		s.ConfigMap != nil, s.Secret != nil, s.ServiceAccount != nil, s.DownwardAPI != nil, s.Sysprep != nil, s.DownwardMetrics != nil)
	if n != 1 { // rule 5
		v.add(field.Invalid(p, n, "must have exactly one source type set"))
	}
	v.configVolume(&s, p)
	v.add(validateVolumeReferences(&s, p)...)
	if s.ContainerDisk != nil && s.ContainerDisk.Image == "" {
		v.add(field.Required(p.Child("containerDisk", "image"), ""))
	}
	if s.ContainerDisk != nil {
		v.pullPolicy(s.ContainerDisk.ImagePullPolicy, p.Child("containerDisk", "imagePullPolicy"))
		if cp := s.ContainerDisk.Path; cp != "" {
			if e := absolutePath(cp, p.Child("containerDisk")); e != nil {
				v.add(e)
			}
		}
	}
	if s.PersistentVolumeClaim != nil && s.PersistentVolumeClaim.ClaimName == "" {
		v.add(field.Required(p.Child("persistentVolumeClaim", "claimName"), ""))
	}
	if s.Ephemeral != nil {
		if s.Ephemeral.PersistentVolumeClaim == nil {
			v.add(field.Required(p.Child("ephemeral", "persistentVolumeClaim"), ""))
		} else if s.Ephemeral.PersistentVolumeClaim.ClaimName == "" {
			v.add(field.Required(p.Child("ephemeral", "persistentVolumeClaim", "claimName"), ""))
		}
	}
	if s.DataVolume != nil && s.DataVolume.Name == "" {
		v.add(field.Required(p.Child("dataVolume", "name"), ""))
	}
	if s.EmptyDisk != nil && s.EmptyDisk.Capacity.Sign() <= 0 {
		v.add(field.Required(p.Child("emptyDisk", "capacity"), "must be greater than 0"))
	}
	if h := s.HostDisk; h != nil { // rule 33
		hp := p.Child("hostDisk")
		if h.Path == "" {
			v.add(field.Required(hp.Child("path"), ""))
		}
		switch h.Type {
		case HostDiskExists:
			if !h.Capacity.IsZero() {
				v.add(field.Invalid(hp.Child("capacity"), h.Capacity.String(), "capacity is only allowed with type DiskOrCreate"))
			}
		case HostDiskExistsOrCreate:
			if h.Capacity.Sign() < 0 {
				v.add(field.Invalid(hp.Child("capacity"), h.Capacity.String(), "must not be negative"))
			}
		default:
			v.add(field.NotSupported(hp.Child("type"), h.Type, []HostDiskType{HostDiskExists, HostDiskExistsOrCreate}))
		}
	}
	if c := s.CloudInitNoCloud; c != nil { // rule 32
		v.cloudInit(p.Child("cloudInitNoCloud"), c.UserDataSecretRef, c.UserDataBase64, c.UserData, c.NetworkDataSecretRef, c.NetworkDataBase64, c.NetworkData)
	}
	if c := s.CloudInitConfigDrive; c != nil {
		v.cloudInit(p.Child("cloudInitConfigDrive"), c.UserDataSecretRef, c.UserDataBase64, c.UserData, c.NetworkDataSecretRef, c.NetworkDataBase64, c.NetworkData)
	}
}

func (v *vmiValidator) cloudInit(p *field.Path, userRef *LocalObjectReference, userB64, user string, netRef *LocalObjectReference, netB64, network string) {
	users := countSet(userRef != nil, userB64 != "", user != "")
	nets := countSet(netRef != nil, netB64 != "", network != "")
	if users == 0 && nets == 0 {
		v.add(field.Required(p, "at least one of userData, userDataBase64, secretRef, networkData, networkDataBase64, networkDataSecretRef is required"))
	}
	// KubeVirt reports too many sources and too much data at the
	// cloud-init source itself.
	if users > 1 {
		v.add(field.Invalid(p, users, "must have only one user data source set"))
	}
	if nets > 1 {
		v.add(field.Invalid(p, nets, "must have only one network data source set"))
	}
	check := func(name, plain, b64 string) {
		data := plain
		if b64 != "" {
			raw, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				v.add(field.Invalid(p.Child(name+"Base64"), "", "is not valid base64: "+err.Error()))
				return
			}
			data = string(raw)
		}
		if len(data) > maxCloudInitDataBytes {
			v.add(field.TooLong(p, "", maxCloudInitDataBytes))
		}
	}
	check("userData", user, userB64)
	check("networkData", network, netB64)
	if userRef != nil && userRef.Name == "" {
		v.add(field.Required(p.Child("secretRef", "name"), ""))
	}
	if netRef != nil && netRef.Name == "" {
		v.add(field.Required(p.Child("networkDataSecretRef", "name"), ""))
	}
}

func (v *vmiValidator) pullPolicy(pp PullPolicy, p *field.Path) {
	valid := []PullPolicy{PullAlways, PullNever, PullIfNotPresent}
	if pp != "" && !slices.Contains(valid, pp) {
		v.add(field.NotSupported(p, pp, valid))
	}
}

var validDiskBuses = []DiskBus{DiskBusVirtio, DiskBusSCSI, DiskBusSATA, DiskBusUSB}

func (v *vmiValidator) diskBus(bus DiskBus, p *field.Path) {
	switch {
	case bus == "":
	case bus == DiskBusIDE:
		e := field.NotSupported(p, bus, validDiskBuses)
		e.Detail = "IDE bus is not supported; " + e.Detail
		v.add(e)
	case !slices.Contains(validDiskBuses, bus):
		v.add(field.NotSupported(p, bus, validDiskBuses))
	}
}

func (v *vmiValidator) disk(d *Disk, p *field.Path) {
	if n := countSet(d.Disk != nil, d.LUN != nil, d.CDRom != nil); n > 1 { // rule 6
		v.add(field.Invalid(p, n, "can only have a single target type defined"))
	}
	var bus DiskBus
	switch {
	case d.Disk != nil:
		bus = d.Disk.Bus
		v.diskBus(bus, p.Child("disk", "bus"))
		if d.Disk.ReadOnly && bus == DiskBusSATA { // rule 9
			v.add(field.Invalid(p.Child("disk", "bus"), bus, "sata hard-disks do not support read-only."))
		}
		if d.Disk.PciAddress != "" { // rule 10
			if bus != DiskBusVirtio {
				v.add(field.Invalid(p.Child("disk", "pciAddress"), d.Disk.PciAddress, "setting a PCI address is only possible with bus type virtio."))
			} else if !pciAddressRE.MatchString(d.Disk.PciAddress) {
				v.add(field.Invalid(p.Child("disk", "pciAddress"), d.Disk.PciAddress, "must be a PCI address like 0000:01:00.0"))
			}
		}
	case d.LUN != nil:
		bus = d.LUN.Bus
		v.diskBus(bus, p.Child("lun", "bus"))
		if vol, ok := v.volumes[d.Name]; ok && vol.PersistentVolumeClaim == nil && vol.DataVolume == nil { // rule 15
			v.add(field.Invalid(p.Child("lun"), d.Name, "lun can only be mapped to a DataVolume or PersistentVolumeClaim volume."))
		}
	case d.CDRom != nil:
		bus = d.CDRom.Bus
		v.diskBus(bus, p.Child("cdrom", "bus"))
		if bus == DiskBusVirtio { // rule 8
			v.add(field.Invalid(p.Child("cdrom", "bus"), bus, "Bus type virtio is invalid for CD-ROM device"))
		}
		if t := d.CDRom.Tray; t != "" && t != TrayStateOpen && t != TrayStateClosed {
			v.add(field.NotSupported(p.Child("cdrom", "tray"), t, []TrayState{TrayStateOpen, TrayStateClosed}))
		}
	}
	if d.DedicatedIOThread != nil && *d.DedicatedIOThread && bus != "" && bus != DiskBusVirtio { // rule 11
		v.add(field.Invalid(p, true, fmt.Sprintf("dedicatedIOThread: IOThreads are not supported for disks on a %s bus", bus)))
	}
	if c := d.Cache; c != "" && !slices.Contains([]DriverCache{CacheNone, CacheWriteThrough, CacheWriteBack}, c) { // rule 12
		v.add(field.NotSupported(p.Child("cache"), c, []DriverCache{CacheNone, CacheWriteThrough, CacheWriteBack}))
	}
	if io := d.IO; io != "" && io != IONative && io != IOThreads {
		v.add(field.NotSupported(p.Child("io"), io, []DriverIO{IONative, IOThreads}))
	}
	if ep := d.ErrorPolicy; ep != nil {
		valid := []DiskErrorPolicy{DiskErrorPolicyStop, DiskErrorPolicyIgnore, DiskErrorPolicyReport, DiskErrorPolicyEnospace}
		if !slices.Contains(valid, *ep) {
			v.add(field.NotSupported(p.Child("errorPolicy"), *ep, valid))
		}
	}
	if s := d.Serial; s != "" { // rule 13
		if len(s) > maxDiskSerialLength {
			v.add(field.TooLong(p.Child("serial"), s, maxDiskSerialLength))
		} else if !diskSerialRE.MatchString(s) {
			v.add(field.Invalid(p.Child("serial"), s, "must be made up of the following characters [A-Za-z0-9_.+-]"))
		}
	}
	v.bootOrder(d.BootOrder, p.Child("bootOrder"))
}

// Rule 14: boot orders are positive and unique across disks and interfaces.
func (v *vmiValidator) bootOrder(order *uint, p *field.Path) {
	if order == nil {
		return
	}
	if *order < 1 {
		v.add(field.Invalid(p, *order, "must have a boot order > 0, if supplied"))
		return
	}
	if first, dup := v.bootOrders[*order]; dup {
		e := field.Duplicate(p, *order)
		e.Detail = "Boot order already set for " + first
		v.add(e)
		return
	}
	v.bootOrders[*order] = p.String()
}

// Rules 16-20, with KubeVirt's paths: every memory size problem is
// reported at resources.requests.memory (or limits.memory), hugepages
// included.
func (v *vmiValidator) resources() {
	dom := &v.spec.Domain
	rp := v.sp.Child("domain", "resources")
	v.add(validateResourceList(dom.Resources.Requests, rp.Child("requests"))...)
	v.add(validateResourceList(dom.Resources.Limits, rp.Child("limits"))...)
	reqMem, hasReqMem := dom.Resources.Requests[ResourceMemory]
	limMem, hasLimMem := dom.Resources.Limits[ResourceMemory]
	var guest *resource.Quantity
	var hugepages *Hugepages
	if dom.Memory != nil {
		guest, hugepages = dom.Memory.Guest, dom.Memory.Hugepages
	}
	mp := v.sp.Child("domain", "memory")
	oneM := resource.MustParse("1M")
	if hasReqMem && reqMem.Sign() > 0 && reqMem.Cmp(oneM) < 0 { // rule 17
		v.add(field.Invalid(rp.Child("requests", string(ResourceMemory)), reqMem.String(), "must be greater than or equal to 1M."))
	}
	if hasReqMem && hasLimMem && limMem.Sign() > 0 && reqMem.Cmp(limMem) > 0 {
		v.add(field.Invalid(rp.Child("requests", string(ResourceMemory)), reqMem.String(),
			fmt.Sprintf("%s is greater than the memory limit %s", reqMem.String(), limMem.String())))
	}
	if dom.Memory != nil && dom.Memory.MaxGuest != nil {
		v.add(validateQuantityRange(ResourceMemory, *dom.Memory.MaxGuest, mp.Child("maxGuest"))...)
	}
	if guest != nil {
		// Rule 18: memory.guest may exceed limits.memory, as under
		// KubeVirt's default LiveUpdate rollout strategy.
		v.add(validateQuantityRange(ResourceMemory, *guest, mp.Child("guest"))...)
		if guest.Sign() < 0 {
			v.add(field.Invalid(mp.Child("guest"), guest.String(), "must not be negative"))
		}
	}
	if hugepages != nil { // rule 19
		size, err := resource.ParseQuantity(hugepages.PageSize)
		if err != nil || size.Sign() <= 0 {
			v.add(field.Invalid(mp.Child("hugepages", "pageSize"), hugepages.PageSize, "must be a page size such as 2Mi or 1Gi"))
		} else {
			// The memory that must hold whole pages: the request, else
			// memory.guest, else the limit.
			var mem int64
			switch {
			case hasReqMem && reqMem.Value() != 0:
				mem = reqMem.Value()
			case guest != nil && guest.Value() != 0:
				mem = guest.Value()
			case hasLimMem:
				mem = limMem.Value()
			}
			if mem != 0 && mem < size.Value() {
				v.add(field.Invalid(rp.Child("requests", string(ResourceMemory)), mem,
					fmt.Sprintf("must be equal to or larger than the hugepage size %s", hugepages.PageSize)))
			} else if mem%size.Value() != 0 {
				v.add(field.Invalid(rp.Child("requests", string(ResourceMemory)), mem,
					fmt.Sprintf("is not a multiple of the hugepage size %s", hugepages.PageSize)))
			}
		}
	}
	reqCPU, hasReqCPU := dom.Resources.Requests[ResourceCPU]
	limCPU, hasLimCPU := dom.Resources.Limits[ResourceCPU]
	if hasReqCPU && hasLimCPU && limCPU.Sign() > 0 && reqCPU.Cmp(limCPU) > 0 { // rule 20
		v.add(field.Invalid(rp.Child("requests", string(ResourceCPU)), reqCPU.String(),
			fmt.Sprintf("%s is greater than the cpu limit %s", reqCPU.String(), limCPU.String())))
	}
}

// Rules 21-23.
func (v *vmiValidator) cpu() {
	cpu := v.spec.Domain.CPU
	if cpu == nil {
		return
	}
	cp := v.sp.Child("domain", "cpu")
	v.add(validateCPUTopology(cpu, cp)...)
	if cpu.MaxSockets != 0 && cpu.Sockets > cpu.MaxSockets { // rule 22
		v.add(field.Invalid(cp.Child("sockets"), cpu.Sockets, "Number of sockets in CPU topology is greater than the maximum sockets allowed"))
	}
	if cpu.IsolateEmulatorThread && !cpu.DedicatedCPUPlacement { // rule 21
		v.add(field.Invalid(cp.Child("isolateEmulatorThread"), true, "IsolateEmulatorThread should be only set in combination with DedicatedCPUPlacement"))
	}
	if cpu.DedicatedCPUPlacement {
		v.dedicatedCPUs(cpu, cp)
	}
	policies := []string{"", "force", "require", "optional", "disable", "forbid"}
	for i, f := range cpu.Features { // rule 23
		fp := cp.Child("features").Index(i)
		if f.Name == "" {
			v.add(field.Required(fp.Child("name"), ""))
		}
		if !slices.Contains(policies, f.Policy) {
			v.add(field.NotSupported(fp.Child("policy"), f.Policy, policies[1:]))
		}
	}
}

// Rule 25 and firmware fields.
func (v *vmiValidator) firmware() {
	fw := v.spec.Domain.Firmware
	if fw == nil {
		return
	}
	fp := v.sp.Child("domain", "firmware")
	if fw.UUID != "" && !IsValidUUID(string(fw.UUID)) {
		v.add(field.Invalid(fp.Child("uuid"), fw.UUID, "must be a UUID such as 5d307ca9-b3ef-428c-8861-06e72d69f223"))
	}
	if bl := fw.Bootloader; bl != nil {
		if bl.BIOS != nil && bl.EFI != nil {
			v.add(field.Invalid(fp.Child("bootloader"), "bios, efi", "only one of bios and efi may be set"))
		}
		if efi := bl.EFI; efi != nil {
			secure := v.spec.Architecture != "arm64"
			if efi.SecureBoot != nil {
				secure = *efi.SecureBoot
			}
			var smm *FeatureState
			if v.spec.Domain.Features != nil {
				smm = v.spec.Domain.Features.SMM
			}
			if secure && !featureOn(smm) {
				v.add(field.Invalid(v.sp.Child("domain"), "secureBoot without smm",
					"EFI SecureBoot is enabled; SecureBoot requires SMM, which is currently disabled (set spec.domain.features.smm)"))
			}
		}
	}
	if kb := fw.KernelBoot; kb != nil {
		kp := fp.Child("kernelBoot")
		if kb.Container == nil {
			if kb.KernelArgs != "" {
				v.add(field.Invalid(kp.Child("kernelArgs"), kb.KernelArgs, "kernel arguments need a kernel boot container"))
			}
		} else {
			if kb.Container.Image == "" {
				v.add(field.Required(kp.Child("container", "image"), ""))
			}
			if kb.Container.KernelPath == "" && kb.Container.InitrdPath == "" {
				v.add(field.Required(kp.Child("container"), "at least one of kernelPath and initrdPath is required"))
			}
			for _, f := range []struct{ name, val string }{{"kernelPath", kb.Container.KernelPath}, {"initrdPath", kb.Container.InitrdPath}} {
				if f.val != "" {
					if e := absolutePath(f.val, kp.Child("container", f.name)); e != nil {
						v.add(e)
					}
				}
			}
			v.pullPolicy(kb.Container.ImagePullPolicy, kp.Child("container", "imagePullPolicy"))
		}
	}
}

func (v *vmiValidator) features() {
	f := v.spec.Domain.Features
	if f == nil || f.Hyperv == nil {
		return
	}
	hp := v.sp.Child("domain", "features", "hyperv")
	if s := f.Hyperv.Spinlocks; s != nil && s.Retries != nil && *s.Retries < DefaultHypervSpinlocks {
		v.add(field.Invalid(hp.Child("spinlocks", "spinlocks"), *s.Retries, "must be at least 4096"))
	}
	if vid := f.Hyperv.VendorID; vid != nil && len(vid.VendorID) > 12 {
		v.add(field.TooLong(hp.Child("vendorid", "vendorid"), vid.VendorID, 12))
	}
}

func (v *vmiValidator) clock() {
	c := v.spec.Domain.Clock
	if c == nil {
		return
	}
	cp := v.sp.Child("domain", "clock")
	if c.UTC != nil && c.Timezone != nil {
		v.add(field.Invalid(cp, "utc, timezone", "only one of utc and timezone may be set"))
	}
	if t := c.Timer; t != nil {
		valid := []TickPolicy{TickPolicyDelay, TickPolicyCatchup, TickPolicyMerge, TickPolicyDiscard}
		check := func(tp TickPolicy, name string) {
			if tp != "" && !slices.Contains(valid, tp) {
				v.add(field.NotSupported(cp.Child("timer", name, "tickPolicy"), tp, valid))
			}
		}
		if t.HPET != nil {
			check(t.HPET.TickPolicy, "hpet")
		}
		if t.PIT != nil {
			check(t.PIT.TickPolicy, "pit")
		}
		if t.RTC != nil {
			check(t.RTC.TickPolicy, "rtc")
			if tr := t.RTC.Track; tr != "" && tr != "guest" && tr != "wall" {
				v.add(field.NotSupported(cp.Child("timer", "rtc", "track"), tr, []string{"guest", "wall"}))
			}
		}
	}
}

var validInterfaceModels = []string{InterfaceModelE1000, InterfaceModelE1000E, InterfaceModelIGB, InterfaceModelNe2kPCI,
	InterfaceModelPCNet, InterfaceModelRTL8139, InterfaceModelVirtio}

// Rules 26-31.
func (v *vmiValidator) networks() {
	spec, sp := v.spec, v.sp
	np := sp.Child("networks")
	ip := sp.Child("domain", "devices", "interfaces")
	if len(spec.Networks) > maxVolumes {
		v.add(field.TooMany(np, len(spec.Networks), maxVolumes))
	}
	networks := map[string]*Network{}
	podNetworks, multusDefaults := 0, 0
	for i := range spec.Networks {
		n := &spec.Networks[i]
		p := np.Index(i)
		if n.Name == "" {
			v.add(field.Required(p.Child("name"), ""))
		} else if _, dup := networks[n.Name]; dup {
			v.add(field.Duplicate(p.Child("name"), n.Name))
		} else {
			networks[n.Name] = n
		}
		switch countSet(n.Pod != nil, n.Multus != nil) { // rule 29
		case 0:
			v.add(field.Required(p, "should have a network type"))
		case 2:
			v.add(field.Invalid(p, "pod, multus", "should have only one network type"))
		}
		if n.Pod != nil {
			podNetworks++
			if podNetworks > 1 {
				v.add(field.Invalid(p, n.Name, "more than one interface is connected to a pod network"))
			}
			if c := n.Pod.VMNetworkCIDR; c != "" {
				if ip, _, err := net.ParseCIDR(c); err != nil || ip.To4() == nil {
					v.add(field.Invalid(p.Child("pod", "vmNetworkCIDR"), c, "must be an IPv4 CIDR"))
				}
			}
			if c := n.Pod.VMIPv6NetworkCIDR; c != "" {
				if ip, _, err := net.ParseCIDR(c); err != nil || ip.To4() != nil {
					v.add(field.Invalid(p.Child("pod", "vmIPv6NetworkCIDR"), c, "must be an IPv6 CIDR"))
				}
			}
		}
		if m := n.Multus; m != nil {
			if m.NetworkName == "" {
				v.add(field.Required(p.Child("multus", "networkName"), ""))
			}
			if m.Default {
				multusDefaults++
				if multusDefaults > 1 {
					v.add(field.Invalid(p.Child("multus", "default"), true, "only one multus network can be the default"))
				}
			}
		}
	}
	if podNetworks > 0 && multusDefaults > 0 {
		v.add(field.Invalid(np, "pod, multus default", "a pod network and a default multus network are mutually exclusive"))
	}
	used := map[string]bool{}
	ifaceNames := map[string]bool{}
	for i := range spec.Domain.Devices.Interfaces {
		iface := &spec.Domain.Devices.Interfaces[i]
		p := ip.Index(i)
		nw := networks[iface.Name]
		switch {
		case iface.Name == "":
			v.add(field.Required(p.Child("name"), ""))
		case ifaceNames[iface.Name]:
			e := field.Duplicate(p.Child("name"), iface.Name)
			e.Detail = "Only one interface can be connected to one specific network"
			v.add(e)
		case nw == nil: // rule 26
			v.add(field.NotFound(p.Child("name"), iface.Name))
		}
		ifaceNames[iface.Name] = true
		if nw != nil {
			used[iface.Name] = true
		}
		b := iface.InterfaceBindingMethod
		for _, old := range []struct {
			set  bool
			name string
		}{{b.Slirp != nil, "slirp"}, {b.Macvtap != nil, "macvtap"}, {b.Passt != nil, "passt"}} {
			if old.set { // rule 27
				v.add(field.Forbidden(p, old.name+" binding is discontinued since KubeVirt v1.3"))
			}
		}
		if n := countSet(b.Bridge != nil, b.Masquerade != nil, b.SRIOV != nil, b.Slirp != nil, b.Macvtap != nil, b.Passt != nil); n == 0 {
			v.add(field.Required(p, "must have exactly one binding method (bridge, masquerade or sriov)"))
		} else if n > 1 {
			v.add(field.Invalid(p, n, "must have exactly one binding method"))
		}
		if nw != nil { // rule 28
			if b.Masquerade != nil && nw.Pod == nil {
				v.add(field.Invalid(p.Child("name"), iface.Name, "Masquerade interface only implemented with pod network"))
			}
			if b.SRIOV != nil && nw.Pod != nil {
				v.add(field.Invalid(p.Child("sriov"), iface.Name, "SRIOV interface only implemented with multus network"))
			}
		}
		if iface.Model != "" && !slices.Contains(validInterfaceModels, iface.Model) { // rule 30
			v.add(field.NotSupported(p.Child("model"), iface.Model, validInterfaceModels))
		}
		if iface.MacAddress != "" {
			if mac, err := net.ParseMAC(iface.MacAddress); err != nil || len(mac) != 6 {
				v.add(field.Invalid(p.Child("macAddress"), iface.MacAddress, "must be a valid MAC address such as de:ad:00:00:be:af"))
			} else if mac[0]&1 == 1 {
				v.add(field.Invalid(p.Child("macAddress"), iface.MacAddress, "must be a unicast MAC address"))
			}
		}
		if iface.PciAddress != "" && !pciAddressRE.MatchString(iface.PciAddress) {
			v.add(field.Invalid(p.Child("pciAddress"), iface.PciAddress, "must be a PCI address like 0000:01:00.0"))
		}
		if st := iface.State; st != "" && st != InterfaceStateLinkUp && st != InterfaceStateLinkDown && st != InterfaceStateAbsent {
			v.add(field.NotSupported(p.Child("state"), st, []InterfaceState{InterfaceStateLinkUp, InterfaceStateLinkDown, InterfaceStateAbsent}))
		}
		if iface.ACPIIndex < 0 {
			v.add(field.Invalid(p.Child("acpiIndex"), iface.ACPIIndex, "must not be negative"))
		}
		v.bootOrder(iface.BootOrder, p.Child("bootOrder"))
		v.ports(iface, p)
	}
	for i, n := range spec.Networks { // rule 26: every network has an interface
		if n.Name != "" && !used[n.Name] && networks[n.Name] == &spec.Networks[i] {
			v.add(field.NotFound(np.Index(i).Child("name"), n.Name))
		}
	}
}

// Rule 31.
func (v *vmiValidator) ports(iface *Interface, p *field.Path) {
	names := map[string]bool{}
	for j, port := range iface.Ports {
		pp := p.Child("ports").Index(j)
		if port.Name != "" {
			for _, msg := range validation.IsValidPortName(port.Name) {
				v.add(field.Invalid(pp.Child("name"), port.Name, msg))
			}
			if names[port.Name] {
				v.add(field.Duplicate(pp.Child("name"), port.Name))
			}
			names[port.Name] = true
		}
		if proto := strings.ToUpper(port.Protocol); port.Protocol != "" && proto != "TCP" && proto != "UDP" {
			v.add(field.NotSupported(pp.Child("protocol"), port.Protocol, []string{"TCP", "UDP"}))
		}
		if port.Port <= 0 || port.Port >= 65536 {
			v.add(field.Invalid(pp.Child("port"), port.Port, "Port field must be in range 0 < x < 65536."))
		}
	}
}

// Rule 37.
func (v *vmiValidator) inputs() {
	names := map[string]bool{}
	for i, in := range v.spec.Domain.Devices.Inputs {
		p := v.sp.Child("domain", "devices", "inputs").Index(i)
		if in.Name == "" {
			v.add(field.Required(p.Child("name"), ""))
		} else if names[in.Name] {
			v.add(field.Duplicate(p.Child("name"), in.Name))
		}
		names[in.Name] = true
		if in.Bus != "" && in.Bus != InputBusUSB && in.Bus != InputBusVirtio {
			v.add(field.NotSupported(p.Child("bus"), in.Bus, []InputBus{InputBusUSB, InputBusVirtio}))
		}
		if in.Type != InputTypeTablet {
			e := field.NotSupported(p.Child("type"), in.Type, []InputType{InputTypeTablet})
			e.Detail = "Input device can have only tablet type; " + e.Detail
			v.add(e)
		}
	}
}

// Rule 35.
func (v *vmiValidator) probesAndStart() {
	spec, sp := v.spec, v.sp
	hasPod := false
	for _, n := range spec.Networks {
		hasPod = hasPod || n.Pod != nil
	}
	for _, pr := range []struct {
		probe *Probe
		name  string
	}{{spec.LivenessProbe, "livenessProbe"}, {spec.ReadinessProbe, "readinessProbe"}} {
		if pr.probe == nil {
			continue
		}
		p := sp.Child(pr.name)
		h := pr.probe.Handler
		if n := countSet(h.Exec != nil, h.HTTPGet != nil, h.TCPSocket != nil, h.GuestAgentPing != nil); n != 1 {
			v.add(field.Invalid(p, n, "must have exactly one probe type set"))
		}
		if !hasPod {
			if h.HTTPGet != nil {
				v.add(field.Invalid(p.Child("httpGet"), pr.name, "httpGet probes need a pod network"))
			}
			if h.TCPSocket != nil {
				v.add(field.Invalid(p.Child("tcpSocket"), pr.name, "tcpSocket probes need a pod network"))
			}
		}
		if h.Exec != nil && len(h.Exec.Command) == 0 {
			v.add(field.Required(p.Child("exec", "command"), ""))
		}
		for _, n := range []struct {
			val  int32
			name string
		}{{pr.probe.InitialDelaySeconds, "initialDelaySeconds"}, {pr.probe.TimeoutSeconds, "timeoutSeconds"},
			{pr.probe.PeriodSeconds, "periodSeconds"}, {pr.probe.SuccessThreshold, "successThreshold"}, {pr.probe.FailureThreshold, "failureThreshold"}} {
			if n.val < 0 {
				v.add(field.Invalid(p.Child(n.name), n.val, "must be greater than or equal to 0"))
			}
		}
	}
	if ss := spec.StartStrategy; ss != nil {
		if *ss != StartStrategyPaused {
			v.add(field.NotSupported(sp.Child("startStrategy"), *ss, []StartStrategy{StartStrategyPaused}))
		} else if spec.LivenessProbe != nil {
			v.add(field.Invalid(sp.Child("startStrategy"), *ss, "a paused start cannot be combined with a liveness probe"))
		}
	}
}

func (v *vmiValidator) scheduling() {
	sp := v.sp
	for k, val := range v.spec.NodeSelector {
		v.add(validateLabelPair(k, val, sp.Child("nodeSelector").Key(k))...)
	}
	effects := []TaintEffect{TaintEffectNoSchedule, TaintEffectPreferNoSchedule, TaintEffectNoExecute}
	for i, t := range v.spec.Tolerations {
		p := sp.Child("tolerations").Index(i)
		switch t.Operator {
		case TolerationOpExists:
			// A value is ignored with Exists; KubeVirt accepts one.
		case TolerationOpEqual, "":
			if t.Key == "" {
				v.add(field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when key is empty"))
			}
		default:
			v.add(field.NotSupported(p.Child("operator"), t.Operator, []TolerationOperator{TolerationOpExists, TolerationOpEqual}))
		}
		if t.Effect != "" && !slices.Contains(effects, t.Effect) {
			v.add(field.NotSupported(p.Child("effect"), t.Effect, effects))
		}
		if t.TolerationSeconds != nil && t.Effect != TaintEffectNoExecute {
			v.add(field.Invalid(p.Child("effect"), t.Effect, "tolerationSeconds needs effect NoExecute"))
		}
	}
	a := v.spec.Affinity
	if a == nil {
		return
	}
	ap := sp.Child("affinity")
	if na := a.NodeAffinity; na != nil {
		np := ap.Child("nodeAffinity")
		if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			rp := np.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
			if len(r.NodeSelectorTerms) == 0 {
				v.add(field.Required(rp, "must have at least one node selector term"))
			}
			for i, term := range r.NodeSelectorTerms {
				v.nodeSelectorTerm(term, rp.Index(i))
			}
		}
		for i, pt := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			pp := np.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			v.weight(pt.Weight, pp.Child("weight"))
			v.nodeSelectorTerm(pt.Preference, pp.Child("preference"))
		}
	}
	podTerms := func(req []PodAffinityTerm, pref []WeightedPodAffinityTerm, p *field.Path) {
		for i, t := range req {
			v.podAffinityTerm(t, p.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))
		}
		for i, t := range pref {
			pp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			v.weight(t.Weight, pp.Child("weight"))
			v.podAffinityTerm(t.PodAffinityTerm, pp.Child("podAffinityTerm"))
		}
	}
	if pa := a.PodAffinity; pa != nil {
		podTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, ap.Child("podAffinity"))
	}
	if pa := a.PodAntiAffinity; pa != nil {
		podTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, ap.Child("podAntiAffinity"))
	}
}

func (v *vmiValidator) weight(w int32, p *field.Path) {
	if w < 1 || w > 100 {
		v.add(field.Invalid(p, w, "must be in the range 1-100"))
	}
}

func (v *vmiValidator) nodeSelectorTerm(term NodeSelectorTerm, p *field.Path) {
	ops := []NodeSelectorOperator{NodeSelectorOpIn, NodeSelectorOpNotIn, NodeSelectorOpExists, NodeSelectorOpDoesNotExist, NodeSelectorOpGt, NodeSelectorOpLt}
	for _, group := range []struct {
		reqs []NodeSelectorRequirement
		name string
	}{{term.MatchExpressions, "matchExpressions"}, {term.MatchFields, "matchFields"}} {
		for j, r := range group.reqs {
			rp := p.Child(group.name).Index(j)
			if group.name == "matchFields" && r.Key != "metadata.name" {
				v.add(field.NotSupported(rp.Child("key"), r.Key, []string{"metadata.name"}))
			} else if group.name == "matchExpressions" {
				v.add(metav1validation.ValidateLabelName(r.Key, rp.Child("key"))...)
			}
			switch r.Operator {
			case NodeSelectorOpIn, NodeSelectorOpNotIn:
				if len(r.Values) == 0 {
					v.add(field.Required(rp.Child("values"), "must be specified when operator is In or NotIn"))
				}
			case NodeSelectorOpExists, NodeSelectorOpDoesNotExist:
				if len(r.Values) > 0 {
					v.add(field.Forbidden(rp.Child("values"), "may not be specified when operator is Exists or DoesNotExist"))
				}
			case NodeSelectorOpGt, NodeSelectorOpLt:
				if len(r.Values) != 1 {
					v.add(field.Required(rp.Child("values"), "must be a single integer when operator is Gt or Lt"))
				}
			default:
				v.add(field.NotSupported(rp.Child("operator"), r.Operator, ops))
			}
		}
	}
}

func (v *vmiValidator) podAffinityTerm(t PodAffinityTerm, p *field.Path) {
	if t.TopologyKey == "" {
		v.add(field.Required(p.Child("topologyKey"), "can not be empty"))
	} else {
		v.add(metav1validation.ValidateLabelName(t.TopologyKey, p.Child("topologyKey"))...)
	}
	opts := metav1validation.LabelSelectorValidationOptions{}
	if t.LabelSelector != nil {
		v.add(metav1validation.ValidateLabelSelector(t.LabelSelector, opts, p.Child("labelSelector"))...)
	}
	if t.NamespaceSelector != nil {
		v.add(metav1validation.ValidateLabelSelector(t.NamespaceSelector, opts, p.Child("namespaceSelector"))...)
	}
}

// Rule 38.
func (v *vmiValidator) hostnameAndDNS() {
	spec, sp := v.spec, v.sp
	if spec.Hostname != "" {
		for _, msg := range validation.IsDNS1123Label(spec.Hostname) {
			v.add(field.Invalid(sp.Child("hostname"), spec.Hostname, msg))
		}
	}
	if spec.Subdomain != "" {
		for _, msg := range validation.IsDNS1123Subdomain(spec.Subdomain) {
			v.add(field.Invalid(sp.Child("subdomain"), spec.Subdomain, msg))
		}
	}
	policies := []DNSPolicy{DNSClusterFirstWithHostNet, DNSClusterFirst, DNSDefault, DNSNone}
	if spec.DNSPolicy != "" && !slices.Contains(policies, spec.DNSPolicy) {
		v.add(field.NotSupported(sp.Child("dnsPolicy"), spec.DNSPolicy, policies))
	}
	cfg := spec.DNSConfig
	if spec.DNSPolicy == DNSNone && (cfg == nil || len(cfg.Nameservers) == 0) {
		v.add(field.Required(sp.Child("dnsConfig", "nameservers"), "must provide at least one DNS nameserver when dnsPolicy is None"))
	}
	if cfg == nil {
		return
	}
	cp := sp.Child("dnsConfig")
	if len(cfg.Nameservers) > 3 {
		v.add(field.TooMany(cp.Child("nameservers"), len(cfg.Nameservers), 3))
	}
	for i, ns := range cfg.Nameservers {
		if net.ParseIP(ns) == nil {
			v.add(field.Invalid(cp.Child("nameservers").Index(i), ns, "must be a valid IP address"))
		}
	}
	if len(cfg.Searches) > 6 {
		v.add(field.TooMany(cp.Child("searches"), len(cfg.Searches), 6))
	}
	for i, s := range cfg.Searches {
		for _, msg := range validation.IsDNS1123Subdomain(strings.TrimSuffix(s, ".")) {
			v.add(field.Invalid(cp.Child("searches").Index(i), s, msg))
		}
	}
	for i, o := range cfg.Options {
		if o.Name == "" {
			v.add(field.Required(cp.Child("options").Index(i), "a DNS option needs a name"))
		}
	}
}
