package domain

import (
	"bytes"
	"encoding/json"
	"io"
)

// Cloud-init data sources, as KubeVirt lays them out:
//   - NoCloud: an ISO labelled "cidata" with user-data, meta-data and,
//     when there is network data, network-config.
//   - ConfigDrive (OpenStack layout): an ISO labelled "config-2" with
//     openstack/latest/user_data, meta_data.json and network_data.json.

// Cloud-init ISO volume labels.
const (
	NoCloudLabel     = "cidata"
	ConfigDriveLabel = "config-2"
)

// CloudInitImage is a cloud-init data source ready to be written as an ISO.
// Build prepares it (pure); a VolumeResolver writes it with WriteTo.
type CloudInitImage struct {
	// Label is the ISO volume label: NoCloudLabel or ConfigDriveLabel.
	Label string
	// Files holds each file's path inside the image and its content,
	// in a fixed order.
	Files []CloudInitFile
}

// CloudInitFile is one file of a cloud-init image.
type CloudInitFile struct {
	Path string
	Data []byte
}

// WriteTo writes the image as an ISO9660 filesystem with Joliet names.
// The same image always gives the same bytes.
func (c *CloudInitImage) WriteTo(w io.Writer) (int64, error) {
	files := make([]isoFile, len(c.Files))
	for i, f := range c.Files {
		files[i] = isoFile(f)
	}
	var buf bytes.Buffer
	if err := writeISO(&buf, c.Label, files); err != nil {
		return 0, err
	}
	return buf.WriteTo(w)
}

// cloudInitData is the format-neutral content of a cloud-init volume.
type cloudInitData struct {
	UserData    []byte
	NetworkData []byte // nil when none
	InstanceID  string
	Hostname    string
	UUID        string
}

func noCloudImage(d cloudInitData) *CloudInitImage {
	// meta-data is YAML; JSON is YAML and needs no YAML encoder here.
	meta, _ := json.Marshal(struct {
		InstanceID    string `json:"instance-id"`
		LocalHostname string `json:"local-hostname,omitempty"`
	}{d.InstanceID, d.Hostname})
	img := &CloudInitImage{Label: NoCloudLabel, Files: []CloudInitFile{
		{Path: "meta-data", Data: append(meta, '\n')},
		{Path: "user-data", Data: d.UserData},
	}}
	if d.NetworkData != nil {
		img.Files = append(img.Files, CloudInitFile{Path: "network-config", Data: d.NetworkData})
	}
	return img
}

func configDriveImage(d cloudInitData) *CloudInitImage {
	meta, _ := json.Marshal(struct {
		UUID     string `json:"uuid"`
		Hostname string `json:"hostname,omitempty"`
		Name     string `json:"name,omitempty"`
	}{d.InstanceID, d.Hostname, d.Hostname})
	img := &CloudInitImage{Label: ConfigDriveLabel, Files: []CloudInitFile{
		{Path: "openstack/latest/meta_data.json", Data: meta},
		{Path: "openstack/latest/user_data", Data: d.UserData},
	}}
	if d.NetworkData != nil {
		img.Files = append(img.Files, CloudInitFile{Path: "openstack/latest/network_data.json", Data: d.NetworkData})
	}
	return img
}
