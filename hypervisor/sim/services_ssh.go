package sim

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/virtkit/virtkit/hypervisor"
)

// sshExitStatus is the payload of an "exit-status" channel request.
type sshExitStatus struct{ Status uint32 }

// sshHostKey is the guest's SSH host key, derived from its UUID (or name):
// it stays the same across restarts and migrations, as a real guest's
// key on its disk does.
func sshHostKey(info hypervisor.DomainInfo) (ssh.Signer, error) {
	seed := sha256.Sum256([]byte("virtkit simulated ssh host key\x00" + info.UUID + "\x00" + info.Name))
	return ssh.NewSignerFromKey(ed25519.NewKeyFromSeed(seed[:]))
}

// authorizedKeys parses the authorized_keys lines login may use: the
// keys given for any login name and those given for login.
func authorizedKeys(keys map[string][]string, login string) []ssh.PublicKey {
	var out []ssh.PublicKey
	for _, line := range append(append([]string(nil), keys[""]...), keys[login]...) {
		if k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line)); err == nil {
			out = append(out, k)
		}
	}
	return out
}

// serveSSH is the simulated guest's SSH server on one connection: public
// key authentication against the cloud-init keys, then session channels
// running the simulated shell, one command ("exec") or interactively
// ("shell"). Other channel types and subsystems are refused.
func serveSSH(ctx context.Context, conn net.Conn, info hypervisor.DomainInfo, keys map[string][]string) {
	signer, err := sshHostKey(info)
	if err != nil {
		return
	}
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			for _, k := range authorizedKeys(keys, meta.User()) {
				if string(k.Marshal()) == string(key.Marshal()) {
					return &ssh.Permissions{}, nil
				}
			}
			return nil, fmt.Errorf("simulated guest %s: key %s not authorized for %s", info.Name, ssh.FingerprintSHA256(key), meta.User())
		},
		ServerVersion: "SSH-2.0-virtkit-sim",
	}
	cfg.AddHostKey(signer)
	sconn, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return
	}
	defer sconn.Close()
	go ssh.DiscardRequests(reqs)
	host := guestHostname(info.Name)
	for {
		select {
		case <-ctx.Done():
			return
		case nc, ok := <-chans:
			if !ok {
				return
			}
			if nc.ChannelType() != "session" {
				_ = nc.Reject(ssh.UnknownChannelType, "the simulated guest opens session channels only")
				continue
			}
			ch, creqs, err := nc.Accept()
			if err != nil {
				continue
			}
			go serveSSHSession(ch, creqs, host, info)
		}
	}
}

// serveSSHSession answers one session channel's requests.
func serveSSHSession(ch ssh.Channel, reqs <-chan *ssh.Request, host string, info hypervisor.DomainInfo) {
	defer ch.Close()
	nl, pty := "\n", false
	for req := range reqs {
		switch req.Type {
		case "pty-req":
			nl, pty = "\r\n", true
			_ = req.Reply(true, nil)
		case "env", "window-change":
			_ = req.Reply(true, nil)
		case "exec":
			var cmd struct{ Command string }
			if err := ssh.Unmarshal(req.Payload, &cmd); err != nil {
				_ = req.Reply(false, nil)
				continue
			}
			_ = req.Reply(true, nil)
			status := runSSHCommand(ch, cmd.Command, nl, host, info)
			_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(sshExitStatus{Status: uint32(status)}))
			return
		case "shell":
			_ = req.Reply(true, nil)
			go func() {
				status := sshShell(ch, pty, nl, host, info)
				_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(sshExitStatus{Status: uint32(status)}))
				_ = ch.Close()
			}()
		default:
			_ = req.Reply(false, nil)
		}
	}
}

// runSSHCommand runs a command line, commands separated by ";" or "&&",
// and returns the last command's exit status.
func runSSHCommand(w io.Writer, line, nl, host string, info hypervisor.DomainInfo) int {
	status := 0
	for _, part := range strings.Split(strings.ReplaceAll(line, "&&", ";"), ";") {
		out, st := shellCommand(part, host, info)
		status = st
		if len(out) > 0 {
			if _, err := io.WriteString(w, strings.Join(out, nl)+nl); err != nil {
				return status
			}
		}
	}
	return status
}

// sshShell is an interactive session of the simulated shell: a prompt,
// one command per line, until "exit" or the end of input. With a terminal
// (pty) a line ends at CR or LF and typed characters are echoed, as the
// terminal's line discipline does.
func sshShell(ch ssh.Channel, pty bool, nl, host string, info hypervisor.DomainInfo) int {
	if _, err := io.WriteString(ch, consolePrompt); err != nil {
		return 0
	}
	r := bufio.NewReaderSize(ch, maxConsoleLine)
	var line []byte
	status := 0
	lastCR := false
	for {
		b, err := r.ReadByte()
		if err != nil {
			return status
		}
		if b == '\n' && lastCR {
			lastCR = false
			continue
		}
		lastCR = b == '\r'
		if b != '\r' && b != '\n' {
			if len(line) < maxConsoleLine {
				line = append(line, b)
				if pty {
					_, _ = ch.Write([]byte{b})
				}
			}
			continue
		}
		if pty {
			_, _ = io.WriteString(ch, "\r\n")
		}
		cmd := strings.TrimSpace(string(line))
		line = line[:0]
		if cmd == "exit" {
			return status
		}
		status = runSSHCommand(ch, cmd, nl, host, info)
		if _, err := io.WriteString(ch, consolePrompt); err != nil {
			return status
		}
	}
}
