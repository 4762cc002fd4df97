package virtctl

import "k8s.io/apimachinery/pkg/runtime/schema"

// SubresourcesPath is where the API serves virtctl's subresources.
const SubresourcesPath = "/apis/subresources.kubevirt.io/v1"

// MigrationsGVR is the VirtualMachineInstanceMigration resource.
var MigrationsGVR = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstancemigrations"}

// vmsGVR is the VirtualMachine resource.
var vmsGVR = MigrationsGVR.GroupVersion().WithResource("virtualmachines")

// The resources the verbs act on.
const (
	VirtualMachines         = "virtualmachines"
	VirtualMachineInstances = "virtualmachineinstances"
)

// Kind says which request a verb makes.
type Kind int

const (
	// Action is a PUT of a subresource with an options body.
	Action Kind = iota
	// GuestInfo is a GET of a subresource whose JSON reply is printed.
	GuestInfo
	// Force is stop or restart: a PUT taking --force with --grace-period.
	Force
	// Cancel is migrate-cancel: the deletion of the unfinished migration.
	Cancel
)

// Verb is one of virtctl's verbs.
type Verb struct {
	// Use and Short are the command's usage line and summary.
	Use, Short string
	Kind       Kind
	// Resource is virtualmachines or virtualmachineinstances; "" takes
	// vm|vmi as the first argument (pause, unpause).
	Resource string
	// Sub is the subresource (the verb's name for Force).
	Sub string
	// Done is what virtctl prints on success, %s being the name.
	Done string
	// DryRun says the verb takes virtctl's --dry-run (the server checks,
	// changes nothing).
	DryRun bool
	// GraceKey is the options body's grace-period field (Force verbs).
	GraceKey string
}

// Verbs are the verbs that PUT or GET a subresource, in the order the CLI
// lists them; stop, restart and migrate-cancel are [Stop], [Restart] and
// [MigrateCancel].
func Verbs() []Verb {
	return []Verb{
		{Use: "start VM", Short: "Start a virtual machine", Resource: VirtualMachines, Sub: "start", Done: "VM %s was scheduled to start", DryRun: true},
		{Use: "migrate VM", Short: "Live-migrate a virtual machine's instance to another node", Resource: VirtualMachines, Sub: "migrate",
			Done: "VM %s was scheduled to migrate", DryRun: true},
		{Use: "pause (vm|vmi) NAME", Short: "Pause a virtual machine's guest", Sub: "pause", Done: "%s was scheduled to pause", DryRun: true},
		{Use: "unpause (vm|vmi) NAME", Short: "Unpause a paused guest", Sub: "unpause", Done: "%s was scheduled to unpause", DryRun: true},
		{Use: "soft-reboot VMI", Short: "Reboot a guest through its agent or ACPI", Resource: VirtualMachineInstances, Sub: "softreboot", Done: "VMI %s was scheduled to soft reboot"},
		{Use: "guestosinfo VMI", Short: "Print the guest agent's OS information (JSON)", Kind: GuestInfo, Resource: VirtualMachineInstances, Sub: "guestosinfo"},
		{Use: "userlist VMI", Short: "Print the users logged into the guest (JSON)", Kind: GuestInfo, Resource: VirtualMachineInstances, Sub: "userlist"},
		{Use: "fslist VMI", Short: "Print the guest's file systems (JSON)", Kind: GuestInfo, Resource: VirtualMachineInstances, Sub: "filesystemlist"},
	}
}

// Stop is virtctl stop (KubeVirt's StopOptions gracePeriod).
func Stop() Verb {
	return Verb{Use: "stop VM", Short: "Stop a virtual machine", Kind: Force, Resource: VirtualMachines, Sub: "stop",
		Done: "VM %s was scheduled to stop", DryRun: true, GraceKey: "gracePeriod"}
}

// Restart is virtctl restart (KubeVirt's RestartOptions gracePeriodSeconds).
func Restart() Verb {
	return Verb{Use: "restart VM", Short: "Restart a virtual machine", Kind: Force, Resource: VirtualMachines, Sub: "restart",
		Done: "VM %s was scheduled to restart", DryRun: true, GraceKey: "gracePeriodSeconds"}
}

// MigrateCancel is virtctl migrate-cancel.
func MigrateCancel() Verb {
	return Verb{Use: "migrate-cancel VM", Short: "Cancel a virtual machine's live migration", Kind: Cancel, Resource: VirtualMachines,
		Done: "VM %s migration %s was cancelled"}
}

// CompletionKind is the kind whose names complete the verb's argument:
// vms, vmis, or "" when the first argument is vm|vmi.
func (v Verb) CompletionKind() string {
	switch v.Resource {
	case VirtualMachines:
		return "vms"
	case "":
		return ""
	}
	return "vmis"
}

// NArgs is how many arguments the verb takes.
func (v Verb) NArgs() int {
	if v.Resource == "" {
		return 2
	}
	return 1
}
