package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// sshOptions are virtkit ssh's flags, as virtctl ssh names them.
type sshOptions struct {
	user       string   // -l, --username (or USER@ in the target)
	port       int      // -p, --port
	identity   string   // -i, --identity-file
	knownHosts string   // --known-hosts
	command    string   // -c, --command
	localOpts  []string // -t, --local-ssh-opts: ssh arguments
	sshOpts    []string // -o, --ssh-option: ssh -o options
}

// defaultKnownHosts is virtctl's known_hosts file, ~/.ssh/kube_known_hosts.
func defaultKnownHosts() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".ssh", "kube_known_hosts")
}

func newSSHCmd() *cobra.Command {
	var (
		kf kubeFlags
		ns namespaceFlags
		o  sshOptions
	)
	cmd := &cobra.Command{
		Use:   "ssh [USER@](vmi|vm)/NAME [-- COMMAND...]",
		Short: "Open an SSH session to a guest",
		Long: `ssh runs the system's ssh client with a ProxyCommand of "virtkit port-forward
--stdio" to the guest's port 22 (--port), so the session goes through the API
and the node agent that runs the guest; no port of the guest needs to be
reachable from here. The user is USER@ or --username; --command (or a COMMAND
after --) runs on the guest. -i is passed to ssh, each -o as ssh -o, and each
--local-ssh-opts (-t) is split at spaces and passed as it is
(-t "-o StrictHostKeyChecking=accept-new"). The host key is recorded under the
alias vmi/NAME.NAMESPACE in --known-hosts (default ~/.ssh/kube_known_hosts, as
virtctl's).` + virtctlLong,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			user, target, hasUser := strings.Cut(args[0], "@")
			if !hasUser {
				target, user = user, ""
			}
			switch {
			case user == "":
				user = o.user
			case o.user != "" && o.user != user:
				return apiFail(cmd, fmt.Errorf("--username %q and %q@ in the target differ", o.user, user))
			}
			o.user = user
			if o.command != "" && len(args) > 1 {
				return apiFail(cmd, errors.New("--command and a COMMAND after -- are exclusive"))
			}
			name, err := parseVMITarget(target)
			if err != nil {
				return apiFail(cmd, err)
			}
			if o.port < 1 || o.port > 65535 {
				return apiFail(cmd, fmt.Errorf("--port: %d is not a port", o.port))
			}
			sshBin, err := exec.LookPath("ssh")
			if err != nil {
				return apiFail(cmd, errors.New("ssh: no ssh client on PATH (Debian: openssh-client)"))
			}
			c, err := kf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			command := args[1:]
			if o.command != "" {
				command = []string{o.command}
			}
			argv, err := sshArgs(name, c.namespace, o, &kf, command)
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
	f := cmd.Flags()
	f.IntVarP(&o.port, "port", "p", 22, "the guest's SSH port")
	f.StringVarP(&o.user, "username", "l", "", "user to log in as on the guest (or USER@ in the target)")
	f.StringVarP(&o.identity, "identity-file", "i", "", "private key file passed to ssh -i")
	f.StringVar(&o.knownHosts, "known-hosts", defaultKnownHosts(), "known_hosts file the guest's host key is checked against and recorded in (\"\": ssh's own)")
	f.StringVarP(&o.command, "command", "c", "", "command to run on the guest instead of a login shell")
	f.StringArrayVarP(&o.localOpts, "local-ssh-opts", "t", nil, "arguments passed to ssh, split at spaces (repeatable)")
	f.StringArrayVarP(&o.sshOpts, "ssh-option", "o", nil, "option passed to ssh -o (repeatable)")
	return cmd
}

// sshArgs builds ssh's arguments: the ProxyCommand runs this binary's
// port-forward --stdio with the same kubeconfig, context and namespace.
func sshArgs(name, namespace string, o sshOptions, kf *kubeFlags, command []string) ([]string, error) {
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
	proxy = append(proxy, shellQuote("vmi/"+name), strconv.Itoa(o.port))
	argv := []string{"-o", "ProxyCommand=" + strings.Join(proxy, " "), "-o", "HostKeyAlias=vmi/" + name + "." + namespace}
	if o.knownHosts != "" {
		if err := os.MkdirAll(filepath.Dir(o.knownHosts), 0o700); err != nil {
			return nil, fmt.Errorf("--known-hosts: %w", err)
		}
		argv = append(argv, "-o", "UserKnownHostsFile="+o.knownHosts)
	}
	if o.identity != "" {
		argv = append(argv, "-i", o.identity)
	}
	for _, opt := range o.sshOpts {
		argv = append(argv, "-o", opt)
	}
	for _, opt := range o.localOpts {
		argv = append(argv, strings.Fields(opt)...)
	}
	host := name + "." + namespace
	if o.user != "" {
		host = o.user + "@" + host
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
