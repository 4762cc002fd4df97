package domain

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/internal/testenv"
)

func TestWriteISODeterministic(t *testing.T) {
	files := []isoFile{{"user-data", []byte("#cloud-config\n")}, {"meta-data", []byte("instance-id: a\n")}}
	var a, b bytes.Buffer
	require.NoError(t, writeISO(&a, "cidata", files))
	require.NoError(t, writeISO(&b, "cidata", files))
	assert.Equal(t, a.Bytes(), b.Bytes())
	assert.Zero(t, a.Len()%isoSector)
	assert.Equal(t, "CD001", string(a.Bytes()[16*isoSector+1:16*isoSector+6]))
}

func TestWriteISORejects(t *testing.T) {
	for name, tc := range map[string]struct {
		label string
		files []isoFile
	}{
		"empty label":    {"", nil},
		"long label":     {"a-label-that-is-too-long", nil},
		"duplicate file": {"cidata", []isoFile{{"a", nil}, {"./a", nil}}},
		"escaping path":  {"cidata", []isoFile{{"../a", nil}}},
		"long name":      {"cidata", []isoFile{{strings.Repeat("n", 65), nil}}},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Error(t, writeISO(&bytes.Buffer{}, tc.label, tc.files))
		})
	}
}

// TestWriteISOIsoinfo reads the images back with genisoimage's isoinfo:
// label, Joliet names, directories and file contents.
func TestWriteISOIsoinfo(t *testing.T) {
	isoinfo := testenv.LookTool(t, "isoinfo", "Debian genisoimage")
	big := bytes.Repeat([]byte("0123456789abcdef"), 300) // spans sectors
	for _, tc := range []struct {
		label string
		files []isoFile
	}{
		{"cidata", []isoFile{
			{"user-data", []byte("#cloud-config\npassword: x\n")},
			{"meta-data", []byte("{\"instance-id\":\"a.b\"}\n")},
			{"network-config", big},
		}},
		{"config-2", []isoFile{
			{"openstack/latest/user_data", []byte("#!/bin/sh\necho hi\n")},
			{"openstack/latest/meta_data.json", []byte("{}")},
			{"openstack/latest/network_data.json", []byte("{\"links\":[]}")},
		}},
	} {
		t.Run(tc.label, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "x.iso")
			var buf bytes.Buffer
			require.NoError(t, writeISO(&buf, tc.label, tc.files))
			require.NoError(t, os.WriteFile(img, buf.Bytes(), 0o644))

			out, err := exec.Command(isoinfo, "-d", "-i", img).CombinedOutput()
			require.NoError(t, err, string(out))
			assert.Contains(t, string(out), "Volume id: "+tc.label)
			assert.Contains(t, string(out), "Joliet with UCS level 3 found")

			out, err = exec.Command(isoinfo, "-J", "-f", "-i", img).CombinedOutput()
			require.NoError(t, err, string(out))
			for _, f := range tc.files {
				assert.Contains(t, string(out), "/"+f.Path+"\n")
				got, err := exec.Command(isoinfo, "-J", "-i", img, "-x", "/"+f.Path).Output()
				require.NoError(t, err)
				assert.Equal(t, string(f.Data), string(got), f.Path)
			}
			// The primary tree is readable too (upper-case level 2 names).
			out, err = exec.Command(isoinfo, "-f", "-i", img).CombinedOutput()
			require.NoError(t, err, string(out))
			assert.NotEmpty(t, strings.TrimSpace(string(out)))
		})
	}
}

func TestPrimaryName(t *testing.T) {
	for in, want := range map[string]string{
		"user-data":         "USER_DATA.;1",
		"meta_data.json":    "META_DATA.JSON;1",
		"network_data.json": "NETWORK_DATA.JSON;1",
	} {
		assert.Equal(t, want, primaryName(in, false), in)
	}
	assert.Equal(t, "OPENSTACK", primaryName("openstack", true))
}
