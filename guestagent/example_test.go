package guestagent_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
)

// A hypervisor's agent-command call carries the requests; here the
// simulated guest answers them, as in the simulated hypervisor.
func Example() {
	guest := qgaserver.New(qgaserver.LinuxGuest("web-1", "52:54:00:ab:cd:ef", "10.0.0.7"))
	c := guestagent.New(guestagent.NewPassthroughTransport(passthrough{guest}, "web-1", guestagent.Options{}), guestagent.Options{})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	osInfo, err := c.OSInfo(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	host, _ := c.HostName(ctx)
	ifaces, _ := c.NetworkInterfaces(ctx)
	fmt.Println(osInfo.PrettyName)
	fmt.Println(host)
	for _, i := range ifaces {
		fmt.Println(i.Name, i.HardwareAddress, guestagent.PrimaryIP(i))
	}
	// Output:
	// Fedora Linux 40 (Cloud Edition)
	// web-1
	// lo 00:00:00:00:00:00 127.0.0.1
	// eth0 52:54:00:ab:cd:ef 10.0.0.7
}

// The byte-stream transport speaks to the host side of the virtio-serial
// channel (or qemu-ga -m unix-listen) and does the sync framing itself.
func ExampleDialUnix() {
	dir, _ := os.MkdirTemp("", "qga")
	defer func() { _ = os.RemoveAll(dir) }()
	sock := filepath.Join(dir, "qga.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = qgaserver.New(qgaserver.Config{Version: "8.2.0"}).Serve(ctx, l) }()

	tr := guestagent.DialUnix(sock, guestagent.Options{})
	defer func() { _ = tr.Close() }()
	c := guestagent.New(tr, guestagent.Options{})
	callCtx, callCancel := context.WithTimeout(ctx, 5*time.Second)
	defer callCancel()
	info, err := c.Info(callCtx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(info.Version, guestagent.MissingRequiredCommands(info))
	// Output: 8.2.0 []
}

// Agent errors keep QEMU's class; commands blocked with qemu-ga -b match
// ErrCommandDisabled.
func ExampleAgentError() {
	guest := qgaserver.New(qgaserver.Config{Disabled: []string{guestagent.CmdShutdown}})
	c := guestagent.New(guestagent.NewPassthroughTransport(passthrough{guest}, "vm", guestagent.Options{}), guestagent.Options{})

	err := c.Shutdown(context.Background(), guestagent.ShutdownReboot)
	var agentErr *guestagent.AgentError
	if errors.As(err, &agentErr) {
		fmt.Println(agentErr.Class)
	}
	fmt.Println(errors.Is(err, guestagent.ErrCommandDisabled))
	fmt.Println(errors.Is(c.Execute(context.Background(), "guest-no-such-command", nil, nil), guestagent.ErrCommandNotFound))
	// Output:
	// CommandNotFound
	// true
	// true
}

// One poll cycle fills the snapshot the node agent turns into VMI status.
func ExamplePoller_PollOnce() {
	cfg := qgaserver.LinuxGuest("db-0", "52:54:00:00:00:10", "10.0.0.10")
	cfg.Disabled = []string{guestagent.CmdGetUsers}
	guest := qgaserver.New(cfg)
	c := guestagent.New(guestagent.NewPassthroughTransport(passthrough{guest}, "db-0", guestagent.Options{}), guestagent.Options{})
	p := guestagent.NewPoller(c, guestagent.PollerOptions{})

	err := p.PollOnce(context.Background())
	fmt.Println(errors.Is(err, guestagent.ErrCommandDisabled))
	s := p.Snapshot()
	fmt.Println(s.Connected, s.OSInfo.Name, s.OSInfo.VersionID, s.HostName, s.FSFreezeStatus)
	for _, i := range s.Interfaces {
		fmt.Println(i.Name, guestagent.PrimaryIP(i))
	}
	fmt.Println(guestagent.MissingRequiredCommands(guestagent.Info{SupportedCommands: s.SupportedCommands}))
	// Output:
	// true
	// true Fedora Linux 40 db-0 thawed
	// eth0 10.0.0.10
	// [guest-get-users]
}

func ExampleSanitize() {
	fmt.Printf("%+q\n", guestagent.Sanitize("Ubuntu\x1b[2J\u202e", 64))
	fmt.Println(guestagent.Sanitize("a-very-long-host-name-from-the-guest", 16))
	// Output:
	// "Ubuntu\ufffd[2J\ufffd"
	// a-very-long-h…
}

func ExampleVersionSupported() {
	fmt.Println(guestagent.VersionSupported("4.2.0"), guestagent.VersionSupported("7.2.22"))
	// Output: true false
}
