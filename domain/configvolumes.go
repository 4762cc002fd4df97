package domain

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/virtkit/virtkit"
)

// Config volumes (configMap, secret, serviceAccount, downwardAPI) reach the
// guest as KubeVirt presents them: a read-only ISO9660 image with one file
// per key, labelled with the volume's volumeLabel or
// virtkit.DefaultConfigVolumeLabel. The content of configMap, secret and
// serviceAccount volumes comes from Options.ConfigResolver; a downwardAPI
// volume is computed from the VMI itself.

// Volume kinds of config volumes.
const (
	VolumeConfigMap      VolumeKind = "configMap"
	VolumeSecret         VolumeKind = "secret"
	VolumeServiceAccount VolumeKind = "serviceAccount"
	VolumeDownwardAPI    VolumeKind = "downwardAPI"
	VolumeSysprep        VolumeKind = "sysprep"
)

// ErrConfigSourceMissing marks a config volume whose ConfigMap, Secret or
// ServiceAccount does not exist and is not optional. It wraps
// ErrNotResolved; the source may appear later, so callers may retry.
var ErrConfigSourceMissing = fmt.Errorf("config volume source missing: %w", ErrNotResolved)

// MaxConfigImageBytes bounds the files of one config volume.
const MaxConfigImageBytes = 4 << 20

// ConfigRequest asks for the files of one config volume.
type ConfigRequest struct {
	// Namespace is the VMI's namespace, where the source lives.
	Namespace string
	// Kind is VolumeConfigMap, VolumeSecret or VolumeServiceAccount.
	Kind VolumeKind
	// Name is the ConfigMap, Secret or ServiceAccount name.
	Name string
	// Optional: a missing source gives no files rather than an error.
	Optional bool
	// Field is the volume source's path (spec.volumes[2].configMap).
	Field string
}

// ConfigFile is one file of a config volume: a key and its value.
type ConfigFile = CloudInitFile

// ConfigResolver reads the content of configMap, secret and serviceAccount
// volumes. A missing source that is not optional is an error wrapping
// ErrConfigSourceMissing; a missing optional one gives no files. Errors and
// logs must never carry a Secret's data.
type ConfigResolver interface {
	ResolveConfig(ctx context.Context, req ConfigRequest) ([]ConfigFile, error)
}

// StaticConfig is a ConfigResolver over fixed content, keyed by
// "<kind>/<namespace>/<name>" (configMap/default/app-config): for tests,
// render and hosts without a store.
type StaticConfig map[string]map[string][]byte

// ResolveConfig implements ConfigResolver.
func (s StaticConfig) ResolveConfig(ctx context.Context, req ConfigRequest) ([]ConfigFile, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, ok := s[string(req.Kind)+"/"+req.Namespace+"/"+req.Name]
	if !ok {
		if req.Optional {
			return nil, nil
		}
		return nil, fmt.Errorf("%s %s/%s not found: %w", req.Kind, req.Namespace, req.Name, ErrConfigSourceMissing)
	}
	return ConfigFiles(data), nil
}

// ConfigFiles turns keys and values into files in key order.
func ConfigFiles(data map[string][]byte) []ConfigFile {
	out := make([]ConfigFile, 0, len(data))
	for _, k := range slices.Sorted(maps.Keys(data)) {
		out = append(out, ConfigFile{Path: k, Data: data[k]})
	}
	return out
}

// configVolume fills req for a config volume source; set collects the
// sources named, as resolveVolume does. It returns false when the volume
// cannot be resolved (the error is recorded).
func (b *builder) configVolume(src *virtkit.VolumeSource, vpath string, req *VolumeRequest, set *[]string) bool {
	var creq *ConfigRequest
	label := ""
	ns := namespaceOf(b.vmi)
	if c := src.ConfigMap; c != nil {
		*set = append(*set, "configMap")
		creq = &ConfigRequest{Namespace: ns, Kind: VolumeConfigMap, Name: c.Name, Optional: boolDefault(c.Optional, false), Field: vpath + ".configMap"}
		label = c.VolumeLabel
	}
	if c := src.Secret; c != nil {
		*set = append(*set, "secret")
		creq = &ConfigRequest{Namespace: ns, Kind: VolumeSecret, Name: c.SecretName, Optional: boolDefault(c.Optional, false), Field: vpath + ".secret"}
		label = c.VolumeLabel
	}
	if c := src.ServiceAccount; c != nil {
		*set = append(*set, "serviceAccount")
		creq = &ConfigRequest{Namespace: ns, Kind: VolumeServiceAccount, Name: c.ServiceAccountName, Field: vpath + ".serviceAccount"}
	}
	if c := src.Sysprep; c != nil {
		*set = append(*set, "sysprep")
		sp := vpath + ".sysprep"
		switch {
		case c.ConfigMap != nil && c.Secret != nil:
			b.fail(sp, "configMap and secret are mutually exclusive")
			return false
		case c.ConfigMap != nil:
			creq = &ConfigRequest{Namespace: ns, Kind: VolumeConfigMap, Name: c.ConfigMap.Name, Field: sp + ".configMap"}
		case c.Secret != nil:
			creq = &ConfigRequest{Namespace: ns, Kind: VolumeSecret, Name: c.Secret.Name, Field: sp + ".secret"}
		default:
			b.fail(sp, "one of configMap or secret is required")
			return false
		}
		label = virtkit.SysprepVolumeLabel
	}
	var files []ConfigFile
	switch {
	case creq != nil:
		req.Kind = creq.Kind
		if src.Sysprep != nil {
			req.Kind = VolumeSysprep
		}
		if creq.Name == "" {
			b.fail(creq.Field, "a name is required")
			return false
		}
		if b.opts.ConfigResolver == nil {
			b.errs = append(b.errs, fmt.Errorf("%s: no config resolver: %w", creq.Field, ErrNotResolved))
			return false
		}
		var err error
		files, err = b.opts.ConfigResolver.ResolveConfig(b.ctx, *creq)
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("%s: %w", creq.Field, err))
			return false
		}
		if src.Sysprep != nil && !hasAnswerFile(files) {
			b.fail(creq.Field, "%s %s/%s has neither autounattend.xml nor unattend.xml", creq.Kind, ns, creq.Name)
			return false
		}
	case src.DownwardAPI != nil:
		*set = append(*set, "downwardAPI")
		req.Kind = VolumeDownwardAPI
		label = src.DownwardAPI.VolumeLabel
		files = b.downwardAPIFiles(src.DownwardAPI, vpath+".downwardAPI")
	default:
		return true
	}
	if label == "" {
		label = virtkit.DefaultConfigVolumeLabel
	}
	if len(label) > virtkit.MaxVolumeLabelLength {
		b.fail(vpath, "volumeLabel %q is longer than %d characters", label, virtkit.MaxVolumeLabelLength)
		return false
	}
	size := 0
	for _, f := range files {
		size += len(f.Path) + len(f.Data)
	}
	if size > MaxConfigImageBytes {
		b.fail(vpath, "%d bytes of data, more than %d", size, MaxConfigImageBytes)
		return false
	}
	req.ReadOnly = true
	req.CloudInit = &CloudInitImage{Label: label, Files: files}
	return true
}

// hasAnswerFile says whether a sysprep volume holds a Windows answer file.
func hasAnswerFile(files []ConfigFile) bool {
	for _, f := range files {
		if strings.EqualFold(f.Path, "autounattend.xml") || strings.EqualFold(f.Path, "unattend.xml") {
			return true
		}
	}
	return false
}

// downwardAPIFiles computes a downwardAPI volume from the VMI's metadata,
// formatted as Kubernetes formats downward API files (maps as key="value"
// lines, sorted).
func (b *builder) downwardAPIFiles(d *virtkit.DownwardAPIVolumeSource, path string) []ConfigFile {
	var out []ConfigFile
	for i, f := range d.Fields {
		fp := fmt.Sprintf("%s.fields[%d]", path, i)
		if err := virtkit.DownwardAPIPath(f.Path); err != nil {
			b.fail(fp+".path", "%q: %v", f.Path, err)
			continue
		}
		if f.FieldRef == nil {
			b.fail(fp+".fieldRef", "required")
			continue
		}
		what, key, err := virtkit.ParseDownwardAPIField(f.FieldRef.FieldPath)
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("%s.fieldRef.fieldPath: %w", fp, err))
			continue
		}
		var v string
		switch what {
		case "name":
			v = b.vmi.Name
		case "namespace":
			v = namespaceOf(b.vmi)
		case "uid":
			v = string(b.vmi.UID)
		case "labels", "annotations":
			m := b.vmi.Labels
			if what == "annotations" {
				m = b.vmi.Annotations
			}
			if key != "" {
				v = m[key]
			} else {
				v = formatMap(m)
			}
		}
		out = append(out, ConfigFile{Path: f.Path, Data: []byte(v)})
	}
	return out
}

func formatMap(m map[string]string) string {
	var sb strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			sb.WriteByte('\n')
		}
		fmt.Fprintf(&sb, "%s=%q", k, m[k])
	}
	return sb.String()
}

// cloudInitSecret reads cloud-init data from a Secret through the
// ConfigResolver: the first of keys it has, as KubeVirt reads userdata or
// userData (networkdata or networkData).
func (b *builder) cloudInitSecret(path, name string, keys ...string) ([]byte, bool) {
	if b.opts.ConfigResolver == nil {
		b.unsupported(path, "secrets need a ConfigResolver")
		return nil, false
	}
	files, err := b.opts.ConfigResolver.ResolveConfig(b.ctx, ConfigRequest{Namespace: namespaceOf(b.vmi), Kind: VolumeSecret, Name: name, Field: path})
	if err != nil {
		b.errs = append(b.errs, fmt.Errorf("%s: %w", path, err))
		return nil, false
	}
	for _, k := range keys {
		for _, f := range files {
			if f.Path == k {
				return f.Data, true
			}
		}
	}
	b.fail(path, "Secret %s/%s has no key %s", namespaceOf(b.vmi), name, strings.Join(keys, " or "))
	return nil, false
}

// IsConfigSourceMissing reports whether err is a missing config volume
// source (which may appear later).
func IsConfigSourceMissing(err error) bool { return errors.Is(err, ErrConfigSourceMissing) }
