package oci

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// A cached disk is shared by every pull of its digest, but a private image
// must not reach a tenant the registry would refuse. Each cached digest
// records who has shown access to it: anyone, when an anonymous pull
// resolved it; otherwise the keyed hashes of the (repository, credentials)
// pairs the registry accepted. The cache serves a pull without asking the
// registry only when the image is public or the pull presents credentials
// recorded for that repository; any other pull asks the registry first
// (policy Never cannot, and is refused with ErrNotPresent).

// access is the record of one cached digest (blobs/<digest>/access.json).
type access struct {
	// Public: an anonymous pull resolved the image.
	Public bool `json:"public,omitempty"`
	// Grants are HMAC-SHA256 of repository and credentials, hex, under
	// the cache's key (so the file holds nothing a password can be
	// guessed from without that key).
	Grants []string `json:"grants,omitempty"`
}

func accessFile(cacheDir, digest string) string {
	return filepath.Join(digestDir(cacheDir, digest), "access.json")
}

func (p *Puller) readAccess(digest string) access {
	var a access
	b, err := os.ReadFile(accessFile(p.opts.CacheDir, digest))
	if err == nil && len(b) <= 1<<20 {
		_ = json.Unmarshal(b, &a) // a damaged record grants nothing
	}
	return a
}

// grant computes what the pull of ref with auth is recorded as: public for
// an anonymous pull, else the credentials' keyed hash.
func (p *Puller) grant(ref name.Reference, auth authn.Authenticator) (public bool, grant string, err error) {
	if auth == nil || auth == authn.Anonymous {
		return true, "", nil
	}
	cfg, err := auth.Authorization()
	if err != nil {
		return false, "", err
	}
	if *cfg == (authn.AuthConfig{}) {
		return true, "", nil
	}
	key, err := p.accessKey()
	if err != nil {
		return false, "", err
	}
	b, err := json.Marshal(struct {
		Repository string
		Auth       *authn.AuthConfig
	}{ref.Context().Name(), cfg})
	if err != nil {
		return false, "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write(b)
	return false, hex.EncodeToString(m.Sum(nil)), nil
}

// mayServe reports whether the pull of ref with auth may have the cached
// digest without asking the registry.
func (p *Puller) mayServe(digest string, ref name.Reference, auth authn.Authenticator) bool {
	a := p.readAccess(digest)
	if a.Public {
		return true
	}
	public, g, err := p.grant(ref, auth)
	if err != nil || public {
		return false
	}
	return slices.Contains(a.Grants, g)
}

// recordAccess notes that the registry let the pull of ref with auth
// resolve digest.
func (p *Puller) recordAccess(digest string, ref name.Reference, auth authn.Authenticator) error {
	public, g, err := p.grant(ref, auth)
	if err != nil {
		return err
	}
	lock := p.lock("access|" + digest)
	lock.Lock()
	defer lock.Unlock()
	a := p.readAccess(digest)
	switch {
	case public && !a.Public:
		a.Public = true
	case !public && !slices.Contains(a.Grants, g):
		a.Grants = append(a.Grants, g)
	default:
		return nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return writeAtomic(accessFile(p.opts.CacheDir, digest), b)
}

// accessKey is the cache's random HMAC key, made on first use.
func (p *Puller) accessKey() ([]byte, error) {
	f := filepath.Join(p.opts.CacheDir, "access-key")
	b, err := os.ReadFile(f)
	if err == nil && len(b) == 32 {
		return b, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	lock := p.lock("access-key")
	lock.Lock()
	defer lock.Unlock()
	if b, err := os.ReadFile(f); err == nil && len(b) == 32 {
		return b, nil
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(p.opts.CacheDir, 0o700); err != nil {
		return nil, err
	}
	if err := writeAtomic(f, key); err != nil {
		return nil, fmt.Errorf("cache access key: %w", err)
	}
	return key, os.Chmod(f, 0o600)
}
