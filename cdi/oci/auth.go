package oci

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// ErrNoCredentials: a pull secret holds no entry for the image's registry.
var ErrNoCredentials = errors.New("pull secret has no credentials for the registry")

// maxSecretBytes bounds a pull secret read from disk.
const maxSecretBytes = 1 << 20

// Secrets finds image pull secrets (Kubernetes' kubernetes.io/dockerconfigjson
// type) by namespace and name.
type Secrets interface {
	DockerConfig(ctx context.Context, namespace, name string) ([]byte, error)
}

// SecretDir reads a secret's .dockerconfigjson key from
// Dir/<namespace>/<name>/.dockerconfigjson (the layout of a Secret
// mounted as a volume).
type SecretDir string

// DockerConfig implements Secrets.
func (d SecretDir) DockerConfig(ctx context.Context, namespace, name string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, s := range []string{namespace, name} {
		if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\") {
			return nil, fmt.Errorf("invalid secret name %q", s)
		}
	}
	p := filepath.Join(string(d), namespace, name, ".dockerconfigjson")
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("pull secret %s/%s: %w", namespace, name, err)
	}
	if st.Size() > maxSecretBytes {
		return nil, fmt.Errorf("pull secret %s/%s: larger than %d bytes", namespace, name, maxSecretBytes)
	}
	return os.ReadFile(p)
}

// AuthFor returns the credentials of a dockerconfigjson document for the
// registry of image.
func AuthFor(dockerConfig []byte, image string) (authn.Authenticator, error) {
	ref, err := name.ParseReference(strings.TrimPrefix(image, "docker://"))
	if err != nil {
		return nil, err
	}
	var cfg struct {
		Auths map[string]struct {
			Username string `json:"username"`
			Password string `json:"password"`
			Auth     string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(dockerConfig, &cfg); err != nil {
		return nil, fmt.Errorf("pull secret: not a dockerconfigjson document: %w", err)
	}
	host := ref.Context().RegistryStr()
	for k, v := range cfg.Auths {
		k = strings.TrimPrefix(strings.TrimPrefix(k, "https://"), "http://")
		k, _, _ = strings.Cut(k, "/")
		if k != host && !(host == name.DefaultRegistry && k == "docker.io") {
			continue
		}
		user, pass := v.Username, v.Password
		if v.Auth != "" {
			b, err := base64.StdEncoding.DecodeString(v.Auth)
			if err != nil {
				return nil, fmt.Errorf("pull secret: auth of %s: %w", k, err)
			}
			u, p, ok := strings.Cut(string(b), ":")
			if !ok {
				return nil, fmt.Errorf("pull secret: auth of %s is not user:password", k)
			}
			user, pass = u, p
		}
		return authn.FromConfig(authn.AuthConfig{Username: user, Password: pass}), nil
	}
	return nil, fmt.Errorf("%w: %s", ErrNoCredentials, host)
}
