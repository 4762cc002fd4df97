package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func newSSHCmd() *cobra.Command {
	var (
		kf       kubeFlags
		ns       namespaceFlags
		port     int
		identity string
		sshOpts  []string
	)
	cmd := &cobra.Command{
		Use:   "ssh [USER@](vmi|vm)/NAME [-- COMMAND...]",
		Short: "Open an SSH session to a guest",
		Long: `ssh runs the system's ssh client with a ProxyCommand of "virtkit port-forward
--stdio" to the guest's port 22 (--port), so the session goes through the API
and the node agent that runs the guest; no port of the guest needs to be
reachable from here. -i and -o are passed to ssh; a COMMAND after -- runs on
the guest. The host key is recorded under the alias vmi/NAME.NAMESPACE.` + virtctlLong,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			user, target, hasUser := strings.Cut(args[0], "@")
			if !hasUser {
				target, user = user, ""
			}
			name, err := parseVMITarget(target)
			if err != nil {
				return apiFail(cmd, err)
			}
			if port < 1 || port > 65535 {
				return apiFail(cmd, fmt.Errorf("--port: %d is not a port", port))
			}
			sshBin, err := exec.LookPath("ssh")
			if err != nil {
				return apiFail(cmd, errors.New("ssh: no ssh client on PATH (Debian: openssh-client)"))
			}
			c, err := kf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			argv, err := sshArgs(user, name, c.namespace, port, identity, sshOpts, &kf, args[1:])
			if err != nil {
				return apiFail(cmd, err)
			}
			s := exec.CommandContext(cmd.Context(), sshBin, argv...)
			s.Stdin, s.Stdout, s.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := s.Run(); err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					return exitError{code: ee.ExitCode()}
				}
				return apiFail(cmd, err)
			}
			return nil
		},
	}
	cmd.ValidArgsFunction = completeNames(&kf, "vmis")
	kf.register(cmd)
	ns.register(cmd, false)
	cmd.Flags().IntVarP(&port, "port", "p", 22, "the guest's SSH port")
	cmd.Flags().StringVarP(&identity, "identity-file", "i", "", "private key file passed to ssh -i")
	cmd.Flags().StringArrayVarP(&sshOpts, "ssh-option", "o", nil, "option passed to ssh -o (repeatable)")
	return cmd
}

// sshArgs builds ssh's arguments: the ProxyCommand runs this binary's
// port-forward --stdio with the same kubeconfig, context and namespace.
func sshArgs(user, name, namespace string, port int, identity string, opts []string, kf *kubeFlags, command []string) ([]string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("ssh: locating virtkit for the ProxyCommand: %w", err)
	}
	proxy := []string{shellQuote(self), "port-forward", "--stdio", "-n", shellQuote(namespace)}
	if kf.kubeconfig != "" {
		proxy = append(proxy, "--kubeconfig", shellQuote(kf.kubeconfig))
	}
	if kf.context != "" {
		proxy = append(proxy, "--context", shellQuote(kf.context))
	}
	proxy = append(proxy, shellQuote("vmi/"+name), strconv.Itoa(port))
	argv := []string{"-o", "ProxyCommand=" + strings.Join(proxy, " "), "-o", "HostKeyAlias=vmi/" + name + "." + namespace}
	if identity != "" {
		argv = append(argv, "-i", identity)
	}
	for _, o := range opts {
		argv = append(argv, "-o", o)
	}
	host := name + "." + namespace
	if user != "" {
		host = user + "@" + host
	}
	argv = append(argv, host)
	if len(command) > 0 {
		argv = append(argv, "--")
		argv = append(argv, command...)
	}
	return argv, nil
}

// shellQuote quotes s for the shell ssh runs the ProxyCommand with.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// newStreamCmds are the stream verbs: console, vnc, port-forward, ssh.
func newStreamCmds() []*cobra.Command {
	return []*cobra.Command{newConsoleCmd(), newVNCCmd(), newPortForwardCmd(), newSSHCmd()}
}
