package virtkit

import (
	"net"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

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
