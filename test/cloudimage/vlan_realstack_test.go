//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package cloudimage_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cluster"
)

// probeReport mirrors what the vlanprobe command prints.
type probeReport struct {
	Kernel string `json:"kernel"`
	Guests []struct {
		Name, NAD, Bridge, Address, MAC string
	} `json:"guests"`
	Checks []struct {
		Name   string `json:"name"`
		Want   bool   `json:"want"`
		Got    bool   `json:"got"`
		Detail string `json:"detail"`
	} `json:"checks"`
	BridgeVLANs json.RawMessage `json:"bridgeVLANs"`
}

// probeChecks is how many checks vlanprobe makes: 11 pings, VLAN
// filtering, 4 access ports and the bridge's own VLAN, the 802.1Q gateway,
// 2 refused definitions.
const probeChecks = 20

// TestRealVLANBridges proves NetworkAttachmentDefinition bridges with a vlan
// on a kernel that has bridge VLAN filtering and 802.1Q: the Debian cloud
// guest's, whatever the test machine's kernel lacks (so it never skips for
// the host's kernel). It builds the vlanprobe command (the node agent's own
// network.Resolver and network.Host), boots the Debian guest, copies the
// command in through the guest agent (guest-file-write) and runs it there
// (guest-exec): two stand-in guests on VLAN 100 (behind two child bridges)
// reach each other and the host's 802.1Q gateway, two on VLAN 200 reach each
// other, and nothing crosses between VLAN 100, VLAN 200 and the untagged
// default VLAN; the access ports carry only their VLAN (preserveDefaultVlan
// false) and vlanTrunk and preserveDefaultVlan: true are refused by name.
func TestRealVLANBridges(t *testing.T) {
	parallelLane(t)
	img := requireCloudStack(t)
	objs, vmi := loadVMIManifest(t, "testdata/vlan.yaml")

	// The command builds while the guest boots.
	probe := filepath.Join(t.TempDir(), "vlanprobe")
	built := make(chan error, 1)
	go func() { built <- buildProbe(probe) }()

	// A node name of its own: a node agent reaps its node's domains that
	// no VMI of its cluster wants, and other clusters may run "img-a" on
	// the same libvirtd.
	c := startCluster(t, img, func(o *cluster.Options) { o.NodeNames = []string{"img-vlan"} })
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout+10*time.Minute)
	defer cancel()
	_, g := bootVMI(ctx, t, c, vmi, objs...)

	select {
	case err := <-built:
		require.NoError(t, err, "building vlanprobe")
	case <-ctx.Done():
		t.Fatal("vlanprobe did not build in time")
	}
	bin, err := os.ReadFile(probe)
	require.NoError(t, err)
	sum := sha256.Sum256(bin)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err = zw.Write(bin)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	start := time.Now()
	require.NoError(t, g.writeFile(ctx, "/var/tmp/vlanprobe.gz", gz.Bytes()))
	r, err := g.exec(ctx, "/bin/sh", "-c", "gunzip -f /var/tmp/vlanprobe.gz && chmod 755 /var/tmp/vlanprobe && sha256sum /var/tmp/vlanprobe")
	require.NoError(t, err)
	require.Equal(t, 0, r.Code, "unpacking vlanprobe: %s", r.Stderr)
	require.Equal(t, hex.EncodeToString(sum[:]), strings.Fields(r.Stdout)[0], "the guest has the command built")
	t.Logf("vlanprobe: %d bytes (%d gzipped) copied in %s", len(bin), gz.Len(), time.Since(start).Round(100*time.Millisecond))

	start = time.Now()
	r, err = g.exec(ctx, "/var/tmp/vlanprobe", "run")
	require.NoError(t, err)
	t.Logf("vlanprobe ran in %s; its log:\n%s", time.Since(start).Round(100*time.Millisecond), r.Stderr)
	require.Equal(t, 0, r.Code, "vlanprobe's set-up failed: %s", r.Stderr)
	var rep probeReport
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep), "%s", r.Stdout)
	release, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	t.Logf("guest kernel %s (host kernel %s)", rep.Kernel, strings.TrimSpace(string(release)))
	for _, gu := range rep.Guests {
		t.Logf("guest %s: NAD %s, bridge %s, %s, %s", gu.Name, gu.NAD, gu.Bridge, gu.Address, gu.MAC)
	}
	require.Len(t, rep.Checks, probeChecks, "every check ran")
	for _, ch := range rep.Checks {
		verdict := map[bool]string{true: "passes", false: "blocked"}
		if strings.HasPrefix(ch.Name, "ping ") {
			t.Logf("%-8s %s", verdict[ch.Got], ch.Name)
			assert.Equal(t, ch.Want, ch.Got, "%s: want %s: %s", ch.Name, verdict[ch.Want], ch.Detail)
			continue
		}
		t.Logf("%-8v %s: %s", ch.Got, ch.Name, ch.Detail)
		assert.Equal(t, ch.Want, ch.Got, "%s: %s", ch.Name, ch.Detail)
	}
	if t.Failed() {
		t.Logf("bridge -j vlan show in the guest: %s", rep.BridgeVLANs)
	}
}

// buildProbe builds the vlanprobe command for the guest: static, linux/amd64.
func buildProbe(out string) error {
	// The go command that runs the test (it sets GOROOT), else PATH's.
	goTool := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goTool); os.Getenv("GOROOT") == "" || err != nil {
		goTool = "go"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./vlanprobe")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./vlanprobe: %w: %s", err, b)
	}
	return nil
}

// writeFile writes data to a guest file through the agent
// (guest-file-open, guest-file-write in chunks, guest-file-close).
func (g guest) writeFile(ctx context.Context, path string, data []byte) error {
	var handle int
	if err := g.c.Execute(ctx, "guest-file-open", map[string]any{"path": path, "mode": "w"}, &handle); err != nil {
		return err
	}
	// qemu-ga refuses much larger commands ("JSON parse error").
	const chunk = 48 << 10
	for off := 0; off < len(data); off += chunk {
		end := min(off+chunk, len(data))
		var wrote struct {
			Count int `json:"count"`
		}
		if err := g.c.Execute(ctx, "guest-file-write", map[string]any{
			"handle": handle, "buf-b64": base64.StdEncoding.EncodeToString(data[off:end]),
		}, &wrote); err != nil {
			return fmt.Errorf("guest-file-write %s at %d: %w", path, off, err)
		}
		if wrote.Count != end-off {
			return fmt.Errorf("guest-file-write %s at %d: wrote %d of %d bytes", path, off, wrote.Count, end-off)
		}
	}
	return g.c.Execute(ctx, "guest-file-close", map[string]any{"handle": handle}, nil)
}
