package node

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
)

func TestGuestConfig(t *testing.T) {
	vol := func(src virtkit.VolumeSource) []virtkit.Volume {
		return []virtkit.Volume{{Name: "disk", VolumeSource: virtkit.VolumeSource{EmptyDisk: &virtkit.EmptyDiskSource{}}}, {Name: "ci", VolumeSource: src}}
	}
	for _, tc := range []struct {
		name    string
		volumes []virtkit.Volume
		want    string
		wantErr string
	}{
		{name: "no cloud-init"},
		{name: "NoCloud inline", volumes: vol(virtkit.VolumeSource{CloudInitNoCloud: &virtkit.CloudInitNoCloudSource{UserData: "#cloud-config\n"}}), want: "#cloud-config\n"},
		{name: "NoCloud base64", volumes: vol(virtkit.VolumeSource{CloudInitNoCloud: &virtkit.CloudInitNoCloudSource{
			UserDataBase64: base64.StdEncoding.EncodeToString([]byte("#cloud-config\nusers: []\n"))}}), want: "#cloud-config\nusers: []\n"},
		{name: "ConfigDrive inline", volumes: vol(virtkit.VolumeSource{CloudInitConfigDrive: &virtkit.CloudInitConfigDriveSource{UserData: "#cloud-config\n"}}), want: "#cloud-config\n"},
		{name: "bad base64", volumes: vol(virtkit.VolumeSource{CloudInitNoCloud: &virtkit.CloudInitNoCloudSource{UserDataBase64: "!!"}}),
			wantErr: "spec.volumes[1].cloudInitNoCloud.userDataBase64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}},
				Spec: virtkit.VirtualMachineInstanceSpec{Volumes: tc.volumes}}
			cfg, err := guestConfig(vmi)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, cfg.UserData)
			assert.Equal(t, map[string]string{"a": "b"}, cfg.Annotations)
		})
	}
}
