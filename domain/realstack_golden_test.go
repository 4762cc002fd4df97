//go:build realstack

package domain_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/internal/testenv"
)

// TestRealStackGoldensDefine hands every golden domain the builder writes to
// the real libvirtd (qemu:///system), which validates it against the QEMU
// it drives; the test driver accepts XML that libvirt's QEMU driver refuses
// (a virtio tablet with a non-transitional model, say). Each golden is
// defined under a name of its own and undefined again; a golden for an
// architecture this host has no emulator for is skipped.
func TestRealStackGoldensDefine(t *testing.T) {
	virsh := testenv.LookTool(t, "virsh", "Debian libvirt-clients")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, virsh, append([]string{"-c", "qemu:///system"}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := run("version"); err != nil {
		testenv.Unavailable(t, "libvirtd (qemu:///system) does not answer: "+strings.TrimSpace(out)+"; start it with hack/realstack/libvirtd.sh start")
	}
	files, err := filepath.Glob("testdata/golden/*.xml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	nameRE := regexp.MustCompile(`<name>[^<]*</name>`)
	uuidRE := regexp.MustCompile(`\s*<uuid>[^<]*</uuid>`)
	dir := t.TempDir()
	for i, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			doc, err := os.ReadFile(f)
			require.NoError(t, err)
			name := fmt.Sprintf("domain-golden-%d-%d", os.Getpid(), i)
			x := nameRE.ReplaceAllString(string(doc), "<name>"+name+"</name>")
			x = uuidRE.ReplaceAllString(x, "")
			p := filepath.Join(dir, name+".xml")
			require.NoError(t, os.WriteFile(p, []byte(x), 0o644))
			out, err := run("define", p)
			if err != nil && strings.Contains(out, "No emulator found for arch") {
				t.Skipf("this host has no emulator for the golden's architecture: %s", strings.TrimSpace(out))
			}
			if err != nil && strings.Contains(out, "does not support virt type 'kvm'") {
				// No usable /dev/kvm here: the rest of the XML is still
				// checked, under TCG.
				t.Logf("no KVM on this host (%s): defining the golden as type qemu", strings.TrimSpace(out))
				x = strings.Replace(x, `<domain type="kvm">`, `<domain type="qemu">`, 1)
				require.NoError(t, os.WriteFile(p, []byte(x), 0o644))
				out, err = run("define", p)
			}
			if err != nil && strings.Contains(x, "<launchSecurity") &&
				(strings.Contains(out, "launch security is not supported with this QEMU binary") ||
					strings.Contains(out, "in element 'launchSecurity'")) {
				t.Skipf("this host's libvirt or QEMU has no such launch security: %s", strings.TrimSpace(out))
			}
			require.NoError(t, err, "libvirtd refuses %s:\n%s", f, out)
			out, err = run("undefine", name, "--nvram")
			require.NoError(t, err, out)
		})
	}
}
