package sim

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// maxConsoleLine bounds one line typed into a simulated console; longer
// input is cut into lines of this size.
const maxConsoleLine = 4096

// consolePrompt is the simulated shell's prompt (busybox's).
const consolePrompt = "/ # "

// OpenConsole attaches to the serial console of a running or paused
// domain. The simulated guest prints its boot messages and a shell prompt
// to each new attachment and answers, line by line, the commands it can
// answer truthfully from the simulation: hostname, uname [-a|-s|-n|-m|-r],
// echo, true, help. Any other command gets "CMD: not supported by the
// simulated guest". Typed characters are echoed as a terminal would. The
// console closes when the domain stops or the stream is closed.
func (h *Host) OpenConsole(ctx context.Context, name string) (io.ReadWriteCloser, error) {
	return h.openConsole(ctx, "open console", name)
}

// openConsole attaches a new session of the simulated shell for op.
func (h *Host) openConsole(ctx context.Context, op, name string) (io.ReadWriteCloser, error) {
	var info hypervisor.DomainInfo
	err := h.do(ctx, func(time.Time) error {
		d, err := h.lookup(op, name)
		if err != nil {
			return err
		}
		if !d.state.IsActive() {
			return invalidState(op, name, "domain is not running")
		}
		info = h.info(d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	guest, user := net.Pipe()
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	events, err := h.Events(cctx)
	if err != nil {
		cancel()
		return nil, hypervisor.WrapDomain(op, name, err)
	}
	go func() {
		// The console ends with the domain.
		defer cancel()
		for ev := range events {
			if ev.Domain == name && ev.Kind == hypervisor.EventLifecycle && !ev.State.IsActive() {
				_ = guest.Close()
				return
			}
		}
	}()
	go func() {
		defer cancel()
		defer guest.Close()
		serveConsole(guest, info)
	}()
	return user, nil
}

// serveConsole is the simulated guest's side of a serial console: a new
// session of the shell on each attachment.
func serveConsole(rw io.ReadWriter, info hypervisor.DomainInfo) {
	sh := newShell(info)
	if _, err := io.WriteString(rw, sh.banner()); err != nil {
		return
	}
	buf := make([]byte, maxConsoleLine)
	for {
		n, err := rw.Read(buf)
		if n > 0 {
			if out := sh.input(buf[:n]); len(out) > 0 {
				if _, werr := rw.Write(out); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// shell is one session of the simulated shell: the line being typed, fed
// bytes as a terminal sends them, answering with what the terminal shows.
type shell struct {
	host   string
	info   hypervisor.DomainInfo
	line   []byte
	lastCR bool
}

func newShell(info hypervisor.DomainInfo) *shell {
	return &shell{host: guestHostname(info.Name), info: info}
}

// banner is what a new session prints: the boot messages and a prompt.
func (s *shell) banner() string {
	boot := []string{
		"Linux version 6.1.0-virtkit-sim (simulated guest of virtkit)",
		fmt.Sprintf("Memory: %dK available", s.info.MaxMemoryBytes/1024),
		fmt.Sprintf("smp: Brought up 1 node, %d CPUs", max(s.info.VCPUs, 1)),
		"Serial: 8250/16550 driver, 4 ports, IRQ sharing enabled",
		"Run /init as init process",
		fmt.Sprintf("virtkit simulated guest %s ready", s.host),
	}
	return strings.Join(boot, "\r\n") + "\r\n" + consolePrompt
}

// input takes typed bytes and returns the output: typed characters
// echoed, a backspace erasing one, and at CR or LF the command's answer
// and a new prompt. A line is at most maxConsoleLine bytes; more is
// dropped.
func (s *shell) input(p []byte) []byte {
	var out []byte
	for _, b := range p {
		if b == '\n' && s.lastCR {
			// The \n of a \r\n pair: the line is answered already.
			s.lastCR = false
			continue
		}
		s.lastCR = b == '\r'
		switch {
		case b == '\r' || b == '\n':
			out = append(out, "\r\n"+consoleAnswer(strings.TrimSpace(string(s.line)), s.host, s.info)+consolePrompt...)
			s.line = s.line[:0]
		case b == 0x7f || b == 0x08: // backspace
			if len(s.line) > 0 {
				s.line = s.line[:len(s.line)-1]
				out = append(out, "\b \b"...)
			}
		default:
			if len(s.line) >= maxConsoleLine {
				continue
			}
			s.line = append(s.line, b)
			out = append(out, b)
		}
	}
	return out
}

// consoleAnswer is the simulated shell's output for one command line,
// ending in a newline when not empty.
func consoleAnswer(cmd, host string, info hypervisor.DomainInfo) string {
	out, _ := shellCommand(cmd, host, info)
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\r\n") + "\r\n"
}

// shellCommand runs one command line of the simulated shell: its output
// lines and exit status (127 for a command the simulated guest cannot
// answer, as a shell's "not found").
func shellCommand(cmd, host string, info hypervisor.DomainInfo) ([]string, int) {
	fields := strings.Fields(cmd)
	if len(fields) == 0 {
		return nil, 0
	}
	lines := func(s ...string) ([]string, int) { return s, 0 }
	switch fields[0] {
	case "hostname":
		return lines(host)
	case "echo":
		return lines(strings.Join(fields[1:], " "))
	case "true":
		return nil, 0
	case "help":
		return lines("commands answered by the simulated guest: hostname, uname [-a|-s|-n|-m|-r], echo, true, help")
	case "uname":
		opt := "-s"
		if len(fields) > 1 {
			opt = fields[1]
		}
		switch opt {
		case "-s":
			return lines("Linux")
		case "-n":
			return lines(host)
		case "-m":
			return lines("x86_64")
		case "-r":
			return lines("6.1.0-virtkit-sim")
		case "-a":
			return lines(fmt.Sprintf("Linux %s 6.1.0-virtkit-sim #1 SMP x86_64 GNU/Linux", host))
		}
		return []string{fmt.Sprintf("uname: option %s: not supported by the simulated guest", opt)}, 1
	}
	return []string{fmt.Sprintf("%s: not supported by the simulated guest", fields[0])}, 127
}

// OpenConsole is Host.OpenConsole.
func (p *Persistent) OpenConsole(ctx context.Context, name string) (io.ReadWriteCloser, error) {
	return p.host.OpenConsole(ctx, name)
}

// OpenVNC is Host.OpenVNC.
func (p *Persistent) OpenVNC(ctx context.Context, name string) (io.ReadWriteCloser, error) {
	return p.host.OpenVNC(ctx, name)
}

var (
	_ hypervisor.ConsoleOpener = (*Persistent)(nil)
	_ hypervisor.ConsoleOpener = (*Host)(nil)
	_ hypervisor.VNCOpener     = (*Host)(nil)
)
