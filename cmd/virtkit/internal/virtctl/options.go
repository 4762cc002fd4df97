package virtctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/term"
)

// ErrNoAPI: Run was called without an API connection.
var ErrNoAPI = errors.New("virtctl: Options.API is not set")

// Options are a virtctl verb's: which verb, its argument, its flags and
// the API connection. Main sets Verb, Out and the flags' fields, calls
// Complete and Validate, connects API, then calls Run.
type Options struct {
	// Verb is the call to make.
	Verb Verb
	// Out receives what virtctl prints on success.
	Out io.Writer
	// Name is the object's name; Resource the resource it is of (Complete
	// sets both from the arguments).
	Name, Resource string
	// DryRun asks the server to check the request without doing it.
	DryRun bool
	// Paused is start's --paused.
	Paused bool
	// AddedNodeSelector is migrate's --addedNodeSelector.
	AddedNodeSelector map[string]string
	// Force, GracePeriod and GracePeriodSet (--grace-period was given) are
	// stop's and restart's.
	Force          bool
	GracePeriod    int64
	GracePeriodSet bool
	// API is the connection to the API server.
	API *kube.Client

	// what is VM or VMI in pause's and unpause's message.
	what string
}

// Complete takes the object (and for pause and unpause first its kind,
// vm or vmi) from args.
func (o *Options) Complete(args []string) error {
	if n := o.Verb.NArgs(); len(args) != n {
		return fmt.Errorf("accepts %d arg(s), received %d", n, len(args))
	}
	o.Resource, o.Name = o.Verb.Resource, args[len(args)-1]
	if o.Verb.Resource != "" {
		return nil
	}
	switch strings.ToLower(args[0]) {
	case "vm", "vms", "virtualmachine", "virtualmachines":
		o.what = "VM"
	case "vmi", "vmis", "virtualmachineinstance", "virtualmachineinstances":
		o.what = "VMI"
	default:
		return fmt.Errorf("%s: want vm or vmi, got %q", o.Verb.Sub, args[0])
	}
	// Pausing a VM pauses its instance, which has its name.
	o.Resource = VirtualMachineInstances
	return nil
}

// Validate checks the grace period of stop and restart: --force and
// --grace-period go together, and the period is not negative.
func (o *Options) Validate() error {
	if o.Verb.Kind != Force {
		return nil
	}
	if o.GracePeriodSet {
		if !o.Force {
			return errors.New("--grace-period: needs --force")
		}
		if o.GracePeriod < 0 {
			return fmt.Errorf("--grace-period: must not be negative, got %d", o.GracePeriod)
		}
	} else if o.Force {
		return errors.New("--force: needs --grace-period")
	}
	return nil
}

// Run makes the call and prints what virtctl prints.
func (o *Options) Run(ctx context.Context) error {
	if o.API == nil {
		return ErrNoAPI
	}
	switch o.Verb.Kind {
	case GuestInfo:
		return guestInfo(ctx, o.API, o.Out, o.Resource, o.Name, o.Verb.Sub)
	case Cancel:
		mig, err := CancelMigration(ctx, o.API, o.Name)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, o.Verb.Done+"\n", term.Esc(o.Name), term.Esc(mig))
		return nil
	}
	if o.what == "VM" {
		// As virtctl: the VM must exist and be set to run.
		if err := vmSetToRun(ctx, o.API, o.Name); err != nil {
			return err
		}
	}
	if err := subresourcePut(ctx, o.API, o.Resource, o.Name, o.Verb.Sub, o.body()); err != nil {
		return err
	}
	msg := o.Verb.Done
	if o.what != "" {
		msg = o.what + " " + msg
	}
	fmt.Fprintf(o.Out, msg+"\n", term.Esc(o.Name))
	return nil
}

// body is the request's options body; a dry run is said first, as virtctl
// does.
func (o *Options) body() map[string]any {
	body := map[string]any{}
	if o.Paused {
		body["paused"] = true
	}
	if len(o.AddedNodeSelector) > 0 {
		body["addedNodeSelector"] = o.AddedNodeSelector
	}
	if o.Verb.Kind == Force && o.GracePeriodSet {
		body[o.Verb.GraceKey] = o.GracePeriod
	}
	if o.DryRun {
		fmt.Fprintln(o.Out, "Dry Run execution")
		body["dryRun"] = []string{metav1.DryRunAll}
	}
	return body
}
