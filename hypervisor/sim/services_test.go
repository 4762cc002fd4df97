package sim_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// bridge makes a guest connection asynchronous, as the node's pump does:
// the client writes without waiting for the guest to read.
func bridge(t *testing.T, rwc io.ReadWriteCloser) net.Conn {
	t.Helper()
	client, mine := net.Pipe()
	go func() { _, _ = io.Copy(rwc, mine); _ = rwc.Close() }()
	go func() { _, _ = io.Copy(mine, rwc); _ = mine.Close() }()
	t.Cleanup(func() { _ = client.Close(); _ = rwc.Close() })
	return client
}

// newSSHKey returns a fresh key pair as an ssh signer and its
// authorized_keys line.
func newSSHKey(t *testing.T) (ssh.Signer, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	return signer, string(ssh.MarshalAuthorizedKey(signer.PublicKey()))
}

// sshRun dials port 22 of the guest through DialGuest and runs cmd.
func sshRun(t *testing.T, h hypervisor.GuestDialer, name, user string, signer ssh.Signer, cmd string) (string, error) {
	t.Helper()
	rwc, err := h.DialGuest(t.Context(), name, "tcp", "10.0.2.2:22")
	if err != nil {
		return "", err
	}
	conn := bridge(t, rwc)
	cc, chans, reqs, err := ssh.NewClientConn(conn, "guest:22", &ssh.ClientConfig{User: user,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second})
	if err != nil {
		return "", err
	}
	client := ssh.NewClient(cc, chans, reqs)
	defer client.Close()
	s, err := client.NewSession()
	if err != nil {
		return "", err
	}
	out, err := s.CombinedOutput(cmd)
	return string(out), err
}

func httpGet(t *testing.T, h hypervisor.GuestDialer, name string, port int, path string) (*http.Response, string, error) {
	t.Helper()
	rwc, err := h.DialGuest(t.Context(), name, "tcp", fmt.Sprintf("10.0.2.2:%d", port))
	if err != nil {
		return nil, "", err
	}
	conn := bridge(t, rwc)
	req, err := http.NewRequest(http.MethodGet, "http://guest"+path, nil)
	require.NoError(t, err)
	require.NoError(t, req.Write(conn))
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, string(body), err
}

func startGuest(t *testing.T, h *sim.Host, name string) {
	t.Helper()
	ctx := t.Context()
	_, err := h.Define(ctx, sizedDomainXML(name, 64<<20, 1))
	require.NoError(t, err)
	require.NoError(t, h.Start(ctx, name, hypervisor.StartOptions{}))
}

// The declared services answer: ssh runs the simulated shell for a key
// from cloud-init, http answers GET, echo echoes; an undeclared port
// refuses.
func TestGuestServices(t *testing.T) {
	ctx := t.Context()
	h := sim.New(sim.Options{Name: "h"})
	startGuest(t, h, "ns_vm")
	signer, line := newSSHKey(t)
	other, otherLine := newSSHKey(t)
	require.NoError(t, h.ConfigureGuest(ctx, "ns_vm", hypervisor.GuestConfig{
		Annotations: map[string]string{sim.ServicesAnnotation: "http:8080, echo:7"},
		UserData:    "#cloud-config\nssh_authorized_keys:\n  - " + line + "users:\n  - name: alice\n    ssh_authorized_keys: [" + otherLine[:len(otherLine)-1] + "]\n",
	}))

	out, err := sshRun(t, h, "ns_vm", "root", signer, "echo hello")
	require.NoError(t, err)
	assert.Equal(t, "hello\n", out)
	out, err = sshRun(t, h, "ns_vm", "cloud-user", signer, "hostname; uname -s")
	require.NoError(t, err)
	assert.Equal(t, "vm\nLinux\n", out)
	out, err = sshRun(t, h, "ns_vm", "root", signer, "frobnicate")
	var exit *ssh.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 127, exit.ExitStatus())
	assert.Contains(t, out, "frobnicate: not supported by the simulated guest")
	// alice's key admits alice only.
	_, err = sshRun(t, h, "ns_vm", "alice", other, "true")
	require.NoError(t, err)
	_, err = sshRun(t, h, "ns_vm", "root", other, "true")
	require.ErrorContains(t, err, "unable to authenticate")

	resp, body, err := httpGet(t, h, "ns_vm", 8080, "/healthz")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "virtkit simulated guest vm: GET /healthz (http service on port 8080)\n", body)

	rwc, err := h.DialGuest(ctx, "ns_vm", "tcp", "10.0.2.2:7")
	require.NoError(t, err)
	conn := bridge(t, rwc)
	_, err = conn.Write([]byte("ping\n"))
	require.NoError(t, err)
	got, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "ping\n", got)

	_, err = h.DialGuest(ctx, "ns_vm", "tcp", "10.0.2.2:9999")
	require.ErrorContains(t, err, "connection refused")
	_, err = h.DialGuest(ctx, "ns_vm", "udp", "10.0.2.2:7")
	require.ErrorIs(t, err, hypervisor.ErrNotSupported)
	_, err = h.DialGuest(ctx, "nope", "tcp", "10.0.2.2:7")
	require.ErrorIs(t, err, hypervisor.ErrNotFound)
}

func TestGuestServicesDeclarationErrors(t *testing.T) {
	h := sim.New(sim.Options{Name: "h"})
	for _, tc := range []struct {
		name, decl, userData, want string
	}{
		{"no port", "ssh", "", "want KIND:PORT"},
		{"port out of range", "http:70000", "", "want KIND:PORT"},
		{"unknown kind", "ftp:21", "", `kind "ftp"`},
		{"duplicate port", "http:80,echo:80", "", "port 80 declared twice"},
		{"bad cloud-config", "", "#cloud-config\nssh_authorized_keys: [\n", "cloud-init userData"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.ConfigureGuest(t.Context(), "ns_vm", hypervisor.GuestConfig{
				Annotations: map[string]string{sim.ServicesAnnotation: tc.decl}, UserData: tc.userData})
			require.ErrorIs(t, err, hypervisor.ErrInvalidArgument)
			assert.ErrorContains(t, err, tc.want)
			if tc.decl != "" {
				assert.ErrorContains(t, err, "metadata.annotations[sim.virtkit.io/services]")
			}
		})
	}
}

// A paused guest refuses new connections and breaks open ones; after
// resume it accepts again.
func TestGuestServicesPause(t *testing.T) {
	ctx := t.Context()
	h := sim.New(sim.Options{Name: "h"})
	startGuest(t, h, "ns_vm")
	require.NoError(t, h.ConfigureGuest(ctx, "ns_vm", hypervisor.GuestConfig{Annotations: map[string]string{sim.ServicesAnnotation: "echo:7"}}))
	rwc, err := h.DialGuest(ctx, "ns_vm", "tcp", "10.0.2.2:7")
	require.NoError(t, err)
	require.NoError(t, h.Pause(ctx, "ns_vm"))
	assertBroken(t, rwc)
	_, err = h.DialGuest(ctx, "ns_vm", "tcp", "10.0.2.2:7")
	require.ErrorIs(t, err, hypervisor.ErrInvalidState)
	require.NoError(t, h.Resume(ctx, "ns_vm"))
	rwc, err = h.DialGuest(ctx, "ns_vm", "tcp", "10.0.2.2:7")
	require.NoError(t, err)
	require.NoError(t, rwc.Close())
}

// assertBroken waits (bounded) for the guest side to close the connection.
func assertBroken(t *testing.T, rwc io.ReadWriteCloser) {
	t.Helper()
	done := make(chan error, 1)
	go func() { _, err := rwc.Read(make([]byte, 1)); done <- err }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, io.EOF)
	case <-time.After(10 * time.Second):
		t.Fatal("the connection stayed open")
	}
	_ = rwc.Close()
}

// A live migration breaks the open connections on the source (the
// switchover's downtime); the guest's services answer on the target, with
// the same SSH host key.
func TestGuestServicesAcrossMigration(t *testing.T) {
	ctx := context.Background()
	clock := sim.NewVirtualClock(epoch)
	src, dst := hostPair(t, clock, sim.Link{Bandwidth: 1000 * MB})
	startGuest(t, src, "ns_vm")
	signer, line := newSSHKey(t)
	cfg := hypervisor.GuestConfig{
		Annotations: map[string]string{sim.ServicesAnnotation: "echo:7"},
		UserData:    "#cloud-config\nssh_authorized_keys: [" + line[:len(line)-1] + "]\n",
	}
	require.NoError(t, src.ConfigureGuest(ctx, "ns_vm", cfg))
	hostKey := func(h *sim.Host) ssh.PublicKey {
		var key ssh.PublicKey
		rwc, err := h.DialGuest(t.Context(), "ns_vm", "tcp", "10.0.2.2:22")
		require.NoError(t, err)
		cc, _, _, err := ssh.NewClientConn(bridge(t, rwc), "guest:22", &ssh.ClientConfig{User: "root",
			Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error { key = k; return nil }})
		require.NoError(t, err)
		require.NoError(t, cc.Close())
		return key
	}
	before := hostKey(src)
	open, err := src.DialGuest(ctx, "ns_vm", "tcp", "10.0.2.2:7")
	require.NoError(t, err)

	job, err := src.StartMigration(ctx, "ns_vm", hypervisor.MigrationParams{DestinationURI: "dst"})
	require.NoError(t, err)
	clock.Advance(10 * time.Second)
	res, err := job.Result(ctx)
	require.NoError(t, err)
	require.True(t, res.Succeeded)
	assertBroken(t, open)

	_, err = src.DialGuest(ctx, "ns_vm", "tcp", "10.0.2.2:7")
	require.Error(t, err, "the source no longer runs the guest")
	require.NoError(t, dst.ConfigureGuest(ctx, "ns_vm", cfg))
	out, err := sshRun(t, dst, "ns_vm", "root", signer, "echo hello")
	require.NoError(t, err)
	assert.Equal(t, "hello\n", out)
	assert.Equal(t, before.Marshal(), hostKey(dst).Marshal(), "the host key moves with the guest")
}

// An interactive SSH session with a terminal: lines end at CR, typed
// characters are echoed, output lines end in CRLF, exit ends the session.
func TestGuestServicesSSHShell(t *testing.T) {
	ctx := t.Context()
	h := sim.New(sim.Options{Name: "h"})
	startGuest(t, h, "ns_vm")
	signer, line := newSSHKey(t)
	require.NoError(t, h.ConfigureGuest(ctx, "ns_vm", hypervisor.GuestConfig{UserData: "#cloud-config\nssh_authorized_keys: [" + line[:len(line)-1] + "]\n"}))
	rwc, err := h.DialGuest(ctx, "ns_vm", "tcp", "10.0.2.2:22")
	require.NoError(t, err)
	cc, chans, reqs, err := ssh.NewClientConn(bridge(t, rwc), "guest:22", &ssh.ClientConfig{User: "root",
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.InsecureIgnoreHostKey()})
	require.NoError(t, err)
	client := ssh.NewClient(cc, chans, reqs)
	defer client.Close()
	sess, err := client.NewSession()
	require.NoError(t, err)
	require.NoError(t, sess.RequestPty("xterm", 25, 80, ssh.TerminalModes{}))
	in, err := sess.StdinPipe()
	require.NoError(t, err)
	out, err := sess.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, sess.Shell())
	_, err = io.WriteString(in, "echo hi\rexit\r")
	require.NoError(t, err)
	got, err := io.ReadAll(out)
	require.NoError(t, err)
	require.NoError(t, sess.Wait())
	assert.Equal(t, "/ # echo hi\r\nhi\r\n/ # exit\r\n", string(got))
}
