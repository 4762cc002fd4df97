package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	validatecmd "github.com/virtkit/virtkit/cmd/virtkit/internal/validate"
)

func newValidateCmd() *cobra.Command {
	var o validatecmd.Options
	cmd := &cobra.Command{
		Use:   "validate -f PATH... [--output text|json]",
		Short: "Decode, default and validate KubeVirt manifests",
		Long: `validate reads every manifest in PATH (a file, a directory of .yaml, .yml and
.json files, or "-" for stdin), decodes it strictly, applies KubeVirt's
defaults and runs KubeVirt's admission rules: the admission chain of the
library's Apply and of the API server, in the same order.

The admission rules for a user's create apply too: reserved kubevirt.io/
labels are refused (a status in a manifest is ignored, as on create).

A VirtualMachine's spec.instancetype and spec.preference are resolved
against the instance types and preferences in the given paths and
KubeVirt's common catalogue (u1.small, fedora, ...; leave it out with
--no-common-instancetypes), and the VM is expanded as KubeVirt's admission
does: a missing one is NotFound, a template field the instance type also
sets is Invalid at its path, an unmet preference requirement is Invalid at
spec.instancetype or the template's CPU or memory, and a field virtkit
cannot honour is NotSupported.

It prints "OK <Kind> <namespace>/<name>" for every good object and one line
"<Kind> <namespace>/<name>: <field path>: <type>: <message>" per problem,
and exits with status 1 if there was any problem. An input without any
object (empty, only comments, only empty Lists) is a problem of type Empty.
Control characters and bidirectional-text overrides in names and messages
are printed escaped (\x1b, \u202e). Extra arguments after the flags are
paths too.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.In, o.Out = cmd.InOrStdin(), cmd.OutOrStdout()
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			err := o.Run(ctx)
			if errors.Is(err, validatecmd.ErrProblems) {
				return exitError{1}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&o.Files, "filename", "f", nil, `manifest file or directory, "-" for stdin (repeatable)`)
	fl.StringVarP(&o.Output, "output", "o", "text", "output format: text or json")
	fl.BoolVarP(&o.Recursive, "recursive", "R", false, "descend into subdirectories")
	fl.BoolVar(&o.NoCommon, "no-common-instancetypes", false, "resolve instance types and preferences from the given paths only")
	return cmd
}
