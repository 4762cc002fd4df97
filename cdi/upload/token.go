package upload

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/utils/clock"
)

// Errors of a token.
var (
	// ErrBadToken: the token is malformed, not signed with the key, or
	// not an upload token.
	ErrBadToken = errors.New("invalid upload token")
	// ErrTokenExpired: the token's lifetime is over.
	ErrTokenExpired = errors.New("upload token expired")
)

// DefaultTokenTTL is how long a token is good for: CDI's five minutes.
const DefaultTokenTTL = 5 * time.Minute

// OperationUpload is the operation an upload token allows.
const OperationUpload = "Upload"

// Claims are what a token says: the claim to upload to and when it stops
// being good.
type Claims struct {
	Operation string    `json:"operation"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Expires   time.Time `json:"expires"`
}

// Tokens issues and verifies upload tokens. Key is required; the zero
// value of the other fields works.
type Tokens struct {
	// Key signs the tokens (HMAC-SHA256); at least 32 bytes.
	Key []byte
	// TTL is a token's lifetime; 0 is DefaultTokenTTL.
	TTL time.Duration
	// Clock; nil is the real clock.
	Clock clock.PassiveClock
}

// NewKey returns a random signing key.
func NewKey() ([]byte, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	return k, nil
}

func (t *Tokens) now() time.Time {
	if t.Clock == nil {
		return time.Now()
	}
	return t.Clock.Now()
}

func (t *Tokens) check() error {
	if len(t.Key) < 32 {
		return fmt.Errorf("upload tokens: Key: %d bytes, want at least 32", len(t.Key))
	}
	return nil
}

// Issue returns a token allowing an upload to claim namespace/name.
func (t *Tokens) Issue(namespace, name string) (string, error) {
	if err := t.check(); err != nil {
		return "", err
	}
	if namespace == "" || name == "" {
		return "", errors.New("upload tokens: a namespace and a claim name are required")
	}
	ttl := t.TTL
	if ttl <= 0 {
		ttl = DefaultTokenTTL
	}
	body, err := json.Marshal(Claims{Operation: OperationUpload, Namespace: namespace, Name: name, Expires: t.now().Add(ttl).UTC()})
	if err != nil {
		return "", err
	}
	payload := base64.RawURLEncoding.EncodeToString(body)
	return payload + "." + base64.RawURLEncoding.EncodeToString(t.sign(payload)), nil
}

func (t *Tokens) sign(payload string) []byte {
	m := hmac.New(sha256.New, t.Key)
	m.Write([]byte("virtkit-upload-token\x00" + payload))
	return m.Sum(nil)
}

// Verify checks a token's signature and lifetime and returns its claims.
func (t *Tokens) Verify(token string) (Claims, error) {
	if err := t.check(); err != nil {
		return Claims{}, err
	}
	payload, sig, ok := strings.Cut(token, ".")
	if !ok || len(token) > 4096 {
		return Claims{}, fmt.Errorf("%w: malformed", ErrBadToken)
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, t.sign(payload)) {
		return Claims{}, fmt.Errorf("%w: bad signature", ErrBadToken)
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: malformed", ErrBadToken)
	}
	var c Claims
	if err := json.Unmarshal(body, &c); err != nil {
		return Claims{}, fmt.Errorf("%w: malformed", ErrBadToken)
	}
	if c.Operation != OperationUpload || c.Namespace == "" || c.Name == "" {
		return Claims{}, fmt.Errorf("%w: not an upload token", ErrBadToken)
	}
	if !t.now().Before(c.Expires) {
		return Claims{}, fmt.Errorf("%w at %s", ErrTokenExpired, c.Expires.Format(time.RFC3339))
	}
	return c, nil
}
