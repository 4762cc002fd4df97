package qgaserver_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
)

// A simulated hypervisor implements AgentCommand with HandleCommand: the
// reply is the whole QGA reply object, as libvirt returns it.
func ExampleServer_HandleCommand() {
	srv := qgaserver.New(qgaserver.LinuxGuest("vm-1", "52:54:00:00:00:01", "10.0.0.2"))
	reply, err := srv.HandleCommand(context.Background(), `{"execute":"guest-get-host-name","id":1}`)
	fmt.Println(reply, err)
	reply, _ = srv.HandleCommand(context.Background(), `{"execute":"guest-no-such-command"}`)
	fmt.Println(reply)
	// Output:
	// {"return":{"host-name":"vm-1"},"id":1} <nil>
	// {"error":{"class":"CommandNotFound","desc":"The command guest-no-such-command has not been found"}}
}

// On a byte stream the server frames like qemu-ga: 0xFF resets its parser
// and the guest-sync-delimited reply starts with 0xFF.
func ExampleServer_ServeConn() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host, guest := net.Pipe()
	go func() { _ = qgaserver.New(qgaserver.Config{}).ServeConn(ctx, guest) }()

	_, _ = host.Write([]byte("\xff{\"execute\":\"guest-sync-delimited\",\"arguments\":{\"id\":7}}\n"))
	r := bufio.NewReader(host)
	for range 2 {
		line, err := r.ReadBytes('\n')
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%q\n", line)
	}
	_ = host.Close()
	// Output:
	// "{\"error\":{\"class\":\"GenericError\",\"desc\":\"JSON parse error, stray '\\ufffd'\"}}\n"
	// "\xff{\"return\":7}\n"
}

// A fault makes the guest hostile; Count limits how many replies it spoils.
func ExampleFault() {
	srv := qgaserver.New(qgaserver.Config{HostName: "vm"})
	srv.SetFault(qgaserver.Fault{Mode: qgaserver.FaultGarbage, Size: 16, Count: 1})
	c := guestagent.New(guestagent.NewPassthroughTransport(commander{srv}, "vm", guestagent.Options{}), guestagent.Options{})
	_, err := c.HostName(context.Background())
	fmt.Println(err != nil)
	h, err := c.HostName(context.Background())
	fmt.Println(h, err)
	// Output:
	// true
	// vm <nil>
}

// Simulated guests report an address on GuestSubnet derived from each
// interface's MAC.
func ExampleLinuxGuestWithMACs() {
	cfg := qgaserver.LinuxGuestWithMACs("web", []string{"52:54:00:12:34:56"}, time.Time{})
	for _, iface := range cfg.Interfaces[1:] {
		fmt.Println(iface.Name, iface.HardwareAddress, iface.IPAddresses[0].Address, iface.IPAddresses[1].Address)
	}
	// Output:
	// eth0 52:54:00:12:34:56 10.18.52.86 fe80::5054:ff:fe12:3456
}
