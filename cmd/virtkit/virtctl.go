package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// subresourcesPath is where the API serves virtctl's subresources.
const subresourcesPath = "/apis/subresources.kubevirt.io/v1"

// migrationsGVR is the VirtualMachineInstanceMigration resource.
var migrationsGVR = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstancemigrations"}

// vmAction is one of virtctl's verbs.
type vmAction struct {
	use, short string
	// resource is virtualmachines or virtualmachineinstances; "" takes
	// vm|vmi as the first argument (pause, unpause).
	resource string
	sub      string // the subresource
	// done is what virtctl prints on success, %s being the name.
	done string
	get  bool // a GET printing the JSON reply (guest information)
	// dryRun adds virtctl's --dry-run (the server checks, changes nothing).
	dryRun bool
	// flags registers the verb's own flags and returns what they add to
	// the request's options body.
	flags func(cmd *cobra.Command) func() (map[string]any, error)
}

func virtctlActions() []vmAction {
	return []vmAction{
		{use: "start VM", short: "Start a virtual machine", resource: "virtualmachines", sub: "start", done: "VM %s was scheduled to start",
			dryRun: true, flags: startFlags},
		{use: "migrate VM", short: "Live-migrate a virtual machine's instance to another node", resource: "virtualmachines", sub: "migrate",
			done: "VM %s was scheduled to migrate", dryRun: true, flags: migrateFlags},
		{use: "pause (vm|vmi) NAME", short: "Pause a virtual machine's guest", sub: "pause", done: "%s was scheduled to pause", dryRun: true},
		{use: "unpause (vm|vmi) NAME", short: "Unpause a paused guest", sub: "unpause", done: "%s was scheduled to unpause", dryRun: true},
		{use: "soft-reboot VMI", short: "Reboot a guest through its agent or ACPI", resource: "virtualmachineinstances", sub: "softreboot", done: "VMI %s was scheduled to soft reboot"},
		{use: "guestosinfo VMI", short: "Print the guest agent's OS information (JSON)", resource: "virtualmachineinstances", sub: "guestosinfo", get: true},
		{use: "userlist VMI", short: "Print the users logged into the guest (JSON)", resource: "virtualmachineinstances", sub: "userlist", get: true},
		{use: "fslist VMI", short: "Print the guest's file systems (JSON)", resource: "virtualmachineinstances", sub: "filesystemlist", get: true},
	}
}

const virtctlLong = `

It calls the control plane's API (subresources.kubevirt.io/v1, as virtctl
does) with the kubeconfig from --kubeconfig, $KUBECONFIG or ~/.kube/config.
Errors are the server's, printed as kubectl prints them, with exit status 1.`

// newVirtctlCmds returns virtctl's verbs as subcommands.
func newVirtctlCmds() []*cobra.Command {
	var cmds []*cobra.Command
	for _, a := range virtctlActions() {
		cmds = append(cmds, newActionCmd(a))
	}
	return append(cmds, newForceCmd("stop", "gracePeriod"), newForceCmd("restart", "gracePeriodSeconds"), newMigrateCancelCmd())
}

// startFlags is start's --paused.
func startFlags(cmd *cobra.Command) func() (map[string]any, error) {
	paused := cmd.Flags().Bool("paused", false, "start the virtual machine with its guest paused")
	return func() (map[string]any, error) {
		if *paused {
			return map[string]any{"paused": true}, nil
		}
		return nil, nil
	}
}

// migrateFlags is migrate's --addedNodeSelector.
func migrateFlags(cmd *cobra.Command) func() (map[string]any, error) {
	sel := cmd.Flags().StringToString("addedNodeSelector", nil,
		"key=value,...: node labels the migration's target must also have (narrows the VM's own constraints for this migration)")
	return func() (map[string]any, error) {
		if len(*sel) == 0 {
			return nil, nil
		}
		return map[string]any{"addedNodeSelector": *sel}, nil
	}
}

// dryRunUsage is virtctl's --dry-run.
const dryRunUsage = "ask the server to check the request without doing it"

// dryRunBody adds the server-side dry run to an options body and says so
// first, as virtctl does.
func dryRunBody(w io.Writer, body map[string]any, dryRun bool) map[string]any {
	if !dryRun {
		return body
	}
	if body == nil {
		body = map[string]any{}
	}
	fmt.Fprintln(w, "Dry Run execution")
	body["dryRun"] = []string{metav1.DryRunAll}
	return body
}

func newActionCmd(a vmAction) *cobra.Command {
	var kf kubeFlags
	var ns namespaceFlags
	var dryRun bool
	var extra func() (map[string]any, error)
	nargs := 1
	if a.resource == "" {
		nargs = 2
	}
	cmd := &cobra.Command{
		Use:   a.use,
		Short: a.short,
		Long:  a.short + "." + virtctlLong,
		Args:  cobra.ExactArgs(nargs),
		RunE: func(cmd *cobra.Command, args []string) error {
			resource, what := a.resource, "VM"
			if a.resource == "" {
				switch strings.ToLower(args[0]) {
				case "vm", "vms", "virtualmachine", "virtualmachines":
					what = "VM"
				case "vmi", "vmis", "virtualmachineinstance", "virtualmachineinstances":
					what = "VMI"
				default:
					return apiFail(cmd, fmt.Errorf("%s: want vm or vmi, got %q", a.sub, args[0]))
				}
				// Pausing a VM pauses its instance, which has its name.
				resource = "virtualmachineinstances"
				args = args[1:]
			}
			c, err := kf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			if a.get {
				return apiFail(cmd, guestInfoCall(cmd.Context(), c, cmd.OutOrStdout(), resource, args[0], a.sub))
			}
			if a.resource == "" && what == "VM" {
				// As virtctl: the VM must exist and be set to run.
				if err := vmSetToRun(cmd.Context(), c, args[0]); err != nil {
					return apiFail(cmd, err)
				}
			}
			body := map[string]any{}
			if extra != nil {
				more, err := extra()
				if err != nil {
					return apiFail(cmd, err)
				}
				maps.Copy(body, more)
			}
			body = dryRunBody(cmd.OutOrStdout(), body, dryRun)
			if err := subresourcePut(cmd.Context(), c, resource, args[0], a.sub, body); err != nil {
				return apiFail(cmd, err)
			}
			msg := a.done
			if a.resource == "" {
				msg = what + " " + msg
			}
			fmt.Fprintf(cmd.OutOrStdout(), msg+"\n", esc(args[0]))
			return nil
		},
	}
	kind := "vmis"
	if a.resource == "virtualmachines" {
		kind = "vms"
	} else if a.resource == "" {
		kind = ""
	}
	cmd.ValidArgsFunction = completeNames(&kf, kind)
	kf.register(cmd)
	ns.register(cmd, false)
	if a.dryRun {
		cmd.Flags().BoolVar(&dryRun, "dry-run", false, dryRunUsage)
	}
	if a.flags != nil {
		extra = a.flags(cmd)
	}
	return cmd
}

// newForceCmd is stop or restart: --force with --grace-period N overrides
// the instance's termination grace period (KubeVirt's StopOptions
// gracePeriod, RestartOptions gracePeriodSeconds: graceKey).
func newForceCmd(verb, graceKey string) *cobra.Command {
	var (
		kf          kubeFlags
		ns          namespaceFlags
		force       bool
		dryRun      bool
		gracePeriod int64
	)
	short, long := "Stop a virtual machine", "Stop a virtual machine: its instance is shut down gracefully."
	if verb == "restart" {
		short, long = "Restart a virtual machine", "Restart a virtual machine: its instance is shut down gracefully and a new one started."
	}
	cmd := &cobra.Command{
		Use:   verb + " VM",
		Short: short,
		Long: long + ` --force with
--grace-period N overrides the instance's termination grace period (0 kills it
at once).` + virtctlLong,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{}
			if cmd.Flags().Changed("grace-period") {
				if !force {
					return apiFail(cmd, errors.New("--grace-period: needs --force"))
				}
				if gracePeriod < 0 {
					return apiFail(cmd, fmt.Errorf("--grace-period: must not be negative, got %d", gracePeriod))
				}
				body[graceKey] = gracePeriod
			} else if force {
				return apiFail(cmd, errors.New("--force: needs --grace-period"))
			}
			c, err := kf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			body = dryRunBody(cmd.OutOrStdout(), body, dryRun)
			if err := subresourcePut(cmd.Context(), c, "virtualmachines", args[0], verb, body); err != nil {
				return apiFail(cmd, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "VM %s was scheduled to %s\n", esc(args[0]), verb)
			return nil
		},
	}
	kf.register(cmd)
	ns.register(cmd, false)
	cmd.Flags().BoolVar(&force, "force", false, verb+" with --grace-period instead of the instance's termination grace period")
	cmd.ValidArgsFunction = completeNames(&kf, "vms")
	cmd.Flags().Int64Var(&gracePeriod, "grace-period", 0, "seconds the guest gets to shut down (with --force)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, dryRunUsage)
	return cmd
}

func newMigrateCancelCmd() *cobra.Command {
	var kf kubeFlags
	var ns namespaceFlags
	cmd := &cobra.Command{
		Use:   "migrate-cancel VM",
		Short: "Cancel a virtual machine's live migration",
		Long: `Cancel a virtual machine's live migration by deleting its migration object that
has not finished yet.` + virtctlLong,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := kf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			name, err := migrateCancel(cmd.Context(), c, args[0])
			if err != nil {
				return apiFail(cmd, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "VM %s migration %s was cancelled\n", esc(args[0]), esc(name))
			return nil
		},
	}
	cmd.ValidArgsFunction = completeNames(&kf, "vms")
	kf.register(cmd)
	ns.register(cmd, false)
	return cmd
}

// migrateCancel deletes the unfinished migration of the VM's instance and
// returns its name; NotFound when there is none.
func migrateCancel(ctx context.Context, c *apiClient, vm string) (string, error) {
	ri := c.dynamic.Resource(migrationsGVR).Namespace(c.namespace)
	list, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, m := range list.Items {
		vmi, _, _ := unstructuredString(m.Object, "spec", "vmiName")
		phase, _, _ := unstructuredString(m.Object, "status", "phase")
		if vmi != vm || phase == "Succeeded" || phase == "Failed" || m.GetDeletionTimestamp() != nil {
			continue
		}
		if ended, _, _ := unstructuredString(m.Object, "status", "migrationState", "endTimestamp"); ended != "" {
			if failed, _, _ := unstructured.NestedBool(m.Object, "status", "migrationState", "failed"); failed {
				return "", fmt.Errorf("migration %s of VM %s cannot be cancelled: it has already failed", m.GetName(), vm)
			}
			// Past the switchover: the guest is on the target already and
			// no abort can bring it back.
			return "", fmt.Errorf("migration %s of VM %s cannot be cancelled: the guest has been moved to the target node, which is taking it over", m.GetName(), vm)
		}
		if err := ri.Delete(ctx, m.GetName(), metav1.DeleteOptions{}); err != nil {
			return "", err
		}
		return m.GetName(), nil
	}
	return "", apierrors.NewNotFound(migrationsGVR.GroupResource(), "active migration of "+vm)
}

func unstructuredString(obj map[string]any, path ...string) (string, bool, error) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[p]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// vmsGVR is the VirtualMachine resource.
var vmsGVR = migrationsGVR.GroupVersion().WithResource("virtualmachines")

// vmSetToRun checks that the VM exists (NotFound otherwise) and is not
// Halted.
func vmSetToRun(ctx context.Context, c *apiClient, name string) error {
	vm, err := c.dynamic.Resource(vmsGVR).Namespace(c.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if rs, _, _ := unstructuredString(vm.Object, "spec", "runStrategy"); rs == "Halted" {
		return fmt.Errorf("VirtualMachine %s is not set to run", name)
	}
	return nil
}

// subresourcePut calls PUT …/namespaces/NS/RESOURCE/NAME/SUB with body.
func subresourcePut(ctx context.Context, c *apiClient, resource, name, sub string, body any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	_, err = doRaw(ctx, c.rest.Put().AbsPath(subresourcesPath, "namespaces", c.namespace, resource, name, sub).
		SetHeader("Content-Type", "application/json").Body(data))
	return err
}

// maxGuestInfo bounds a guest-information reply.
const maxGuestInfo = 4 << 20

// guestInfoCall prints a guest-information subresource's JSON, indented.
func guestInfoCall(ctx context.Context, c *apiClient, w io.Writer, resource, name, sub string) error {
	raw, err := doRaw(ctx, c.rest.Get().AbsPath(subresourcesPath, "namespaces", c.namespace, resource, name, sub))
	if err != nil {
		return err
	}
	if len(raw) > maxGuestInfo {
		return fmt.Errorf("%s: reply larger than %d bytes", sub, maxGuestInfo)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return fmt.Errorf("%s: the server's reply is not JSON: %w", sub, err)
	}
	out.WriteByte('\n')
	_, err = w.Write(escapeJSON(out.Bytes()))
	return err
}
