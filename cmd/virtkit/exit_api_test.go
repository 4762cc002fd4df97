package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every API command fails as kubectl does: exit status 1, nothing on
// standard output, and kubectl's first line on standard error for
// NotFound, Forbidden, Unauthorized, Conflict and Invalid.
func TestExitCodesAsKubectl(t *testing.T) {
	kc := startAPIController(t, "--nodes", "1", "--heartbeat-interval", "200ms")
	admin := cli{t: t, kubeconfig: kc}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	running := write("run.yaml", strings.ReplaceAll(apiVM, "vm-api", "vm-run"))
	halted := write("off.yaml", strings.ReplaceAll(strings.Replace(apiVM, "runStrategy: Always", "runStrategy: Halted", 1), "vm-api", "vm-off"))
	missing := write("missing.yaml", strings.ReplaceAll(apiVM, "vm-api", "vm-missing"))
	invalid := write("invalid.yaml", strings.Replace(strings.ReplaceAll(apiVM, "vm-api", "vm-run"), "runStrategy: Always", "runStrategy: Sometimes", 1))
	invalid2 := write("invalid2.yaml", strings.Replace(strings.Replace(strings.ReplaceAll(apiVM, "vm-api", "vm-run"),
		"runStrategy: Always", "runStrategy: Sometimes", 1), "guest: 128Mi", "guest: -1Mi", 1))
	admin.ok("apply", "-f", running, "-f", halted)
	admin.eventually("Running", "get", "vmi", "vm-run")
	admin.eventually("Running", "get", "vm", "vm-run")
	alice := cli{t: t, kubeconfig: tokenUserKubeconfig(t, kc, "alice-token")}
	stranger := cli{t: t, kubeconfig: tokenUserKubeconfig(t, kc, "no-such-token")}

	const (
		notFound     = `Error from server (NotFound): `
		forbidden    = `Error from server (Forbidden): `
		unauthorized = `error: You must be logged in to the server (`
		conflict     = `Error from server (Conflict): `
	)
	vmNotFound := notFound + `virtualmachines.kubevirt.io "nope" not found`
	for _, tc := range []struct {
		name string
		as   cli
		args []string
		want string // the first line of standard error starts with it
	}{
		{"get", admin, []string{"get", "vm", "nope"}, vmNotFound},
		{"get -o json", admin, []string{"get", "vm", "nope", "-o", "json"}, vmNotFound},
		{"describe", admin, []string{"describe", "vm", "nope"}, vmNotFound},
		{"delete", admin, []string{"delete", "vm", "nope"}, vmNotFound},
		{"delete -f", admin, []string{"delete", "-f", missing}, notFound + `virtualmachines.kubevirt.io "vm-missing" not found`},
		{"start", admin, []string{"start", "nope"}, notFound},
		{"stop", admin, []string{"stop", "nope"}, notFound},
		{"restart", admin, []string{"restart", "nope"}, notFound},
		{"migrate", admin, []string{"migrate", "nope"}, notFound},
		{"migrate-cancel", admin, []string{"migrate-cancel", "vm-run"}, notFound},
		{"pause", admin, []string{"pause", "vmi", "nope"}, notFound},
		{"unpause", admin, []string{"unpause", "vm", "nope"}, vmNotFound},
		{"pause vm", admin, []string{"pause", "vm", "nope"}, vmNotFound},
		{"pause halted vm", admin, []string{"pause", "vm", "vm-off"}, "error: VirtualMachine vm-off is not set to run"},
		{"soft-reboot", admin, []string{"soft-reboot", "nope"}, notFound},
		{"guestosinfo", admin, []string{"guestosinfo", "nope"}, notFound},
		{"userlist", admin, []string{"userlist", "nope"}, notFound},
		{"fslist", admin, []string{"fslist", "nope"}, notFound},

		{"get forbidden", alice, []string{"get", "vm", "vm-run", "-n", "default"},
			forbidden + `virtualmachines.kubevirt.io "vm-run" is forbidden: User "alice" cannot get resource "virtualmachines" in API group "kubevirt.io" in the namespace "default"`},
		{"list forbidden", alice, []string{"get", "vms", "-n", "default"}, forbidden},
		{"watch forbidden", alice, []string{"get", "vms", "-n", "default", "-w"}, forbidden},
		{"describe forbidden", alice, []string{"describe", "vm", "vm-run", "-n", "default"}, forbidden},
		{"apply forbidden", alice, []string{"apply", "-f", running, "-n", "default"}, forbidden},
		{"delete forbidden", alice, []string{"delete", "vm", "vm-run", "-n", "default"}, forbidden},
		{"start forbidden", alice, []string{"start", "vm-off", "-n", "default"}, forbidden},
		{"stop forbidden", alice, []string{"stop", "vm-run", "-n", "default"}, forbidden},
		{"restart forbidden", alice, []string{"restart", "vm-run", "-n", "default", "--force", "--grace-period", "0"}, forbidden},
		{"migrate forbidden", alice, []string{"migrate", "vm-run", "-n", "default"}, forbidden},
		{"migrate-cancel forbidden", alice, []string{"migrate-cancel", "vm-run", "-n", "default"}, forbidden},
		{"pause forbidden", alice, []string{"pause", "vm", "vm-run", "-n", "default"}, forbidden},
		{"unpause forbidden", alice, []string{"unpause", "vmi", "vm-run", "-n", "default"}, forbidden},
		{"soft-reboot forbidden", alice, []string{"soft-reboot", "vm-run", "-n", "default"}, forbidden},
		{"guestosinfo forbidden", alice, []string{"guestosinfo", "vm-run", "-n", "default"}, forbidden},
		{"userlist forbidden", alice, []string{"userlist", "vm-run", "-n", "default"}, forbidden},
		{"fslist forbidden", alice, []string{"fslist", "vm-run", "-n", "default"}, forbidden},

		{"get unauthorized", stranger, []string{"get", "vms"}, unauthorized},
		{"describe unauthorized", stranger, []string{"describe", "vm", "vm-run"}, unauthorized},
		{"apply unauthorized", stranger, []string{"apply", "-f", running}, unauthorized},
		{"delete unauthorized", stranger, []string{"delete", "vm", "vm-run"}, unauthorized},
		{"start unauthorized", stranger, []string{"start", "vm-off"}, unauthorized},
		{"stop unauthorized", stranger, []string{"stop", "vm-run"}, unauthorized},
		{"pause unauthorized", stranger, []string{"pause", "vmi", "vm-run"}, unauthorized},
		{"guestosinfo unauthorized", stranger, []string{"guestosinfo", "vm-run"}, unauthorized},

		{"start running", admin, []string{"start", "vm-run"}, conflict},
		{"stop halted", admin, []string{"stop", "vm-off"}, conflict},
		{"migrate halted", admin, []string{"migrate", "vm-off"}, conflict},
		{"unpause running", admin, []string{"unpause", "vmi", "vm-run"}, conflict},

		{"apply invalid", admin, []string{"apply", "-f", invalid},
			`The VirtualMachine "vm-run" is invalid: spec.runStrategy: `},
		{"apply invalid, two causes", admin, []string{"apply", "-f", invalid2}, `The VirtualMachine "vm-run" is invalid: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.as.t = t
			out, errOut, err := tc.as.run(t.Context(), tc.args...)
			require.Error(t, err, "%s: %s", tc.args, out)
			var ex exitError
			require.True(t, asExit(err, &ex), "kubectl-style exit, got %v", err)
			assert.Equal(t, 1, ex.code)
			if !strings.HasSuffix(tc.args[len(tc.args)-1], "-w") {
				assert.Empty(t, out, "nothing on standard output")
			}
			first, _, _ := strings.Cut(errOut, "\n")
			assert.True(t, strings.HasPrefix(first, tc.want), "stderr %q\nwant prefix %q", errOut, tc.want)
		})
	}
	// Two causes: one per line, as kubectl lists them.
	_, errOut, _ := admin.run(t.Context(), "apply", "-f", invalid2)
	assert.Regexp(t, `^The VirtualMachine "vm-run" is invalid: \n\* .+\n\* .+\n$`, errOut)
	// Nothing that failed changed anything.
	assert.Equal(t, "Always", admin.ok("get", "vm", "vm-run", "-o", "jsonpath={.spec.runStrategy}"))
	assert.Equal(t, "Halted", admin.ok("get", "vm", "vm-off", "-o", "jsonpath={.spec.runStrategy}"))
}
