package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Files of a certificate directory.
const (
	CACertFile      = "ca.crt"
	CAKeyFile       = "ca.key"
	ServingCertFile = "tls.crt"
	ServingKeyFile  = "tls.key"
	AdminCertFile   = "admin.crt"
	AdminKeyFile    = "admin.key"
	// AdminUser is the common name of the generated admin certificate.
	AdminUser = "virtkit-admin"
)

// certValidity is how long generated certificates are valid.
const certValidity = 10 * 365 * 24 * time.Hour

// Certificates are a CA, a serving certificate it signed and an admin
// client certificate.
type Certificates struct {
	CA        *x509.Certificate
	CAPEM     []byte
	caKey     *ecdsa.PrivateKey
	Serving   tls.Certificate
	AdminCert []byte // PEM
	AdminKey  []byte // PEM
}

// EnsureCertificates loads the CA, serving and admin certificates from dir,
// generating (and writing, keys mode 0600) what is missing: a CA, a serving
// certificate for localhost, 127.0.0.1, ::1 and hosts, and an admin client
// certificate (AdminUser in AdminGroup). A serving certificate that does not
// cover every host is generated again.
func EnsureCertificates(dir string, hosts []string) (*Certificates, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("certificate directory: %w", err)
	}
	c := &Certificates{}
	caPEM, caKeyPEM, err := readPair(dir, CACertFile, CAKeyFile)
	if errors.Is(err, os.ErrNotExist) {
		caPEM, caKeyPEM, err = newCA()
		if err == nil {
			err = writePair(dir, CACertFile, CAKeyFile, caPEM, caKeyPEM)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	if c.CA, c.caKey, err = parsePair(caPEM, caKeyPEM); err != nil {
		return nil, fmt.Errorf("CA %s: %w", filepath.Join(dir, CACertFile), err)
	}
	c.CAPEM = caPEM
	all := append([]string{"localhost", "127.0.0.1", "::1"}, hosts...)
	certPEM, keyPEM, err := readPair(dir, ServingCertFile, ServingKeyFile)
	if err == nil {
		if cert, _, perr := parsePair(certPEM, keyPEM); perr != nil || !covers(cert, all) {
			err = os.ErrNotExist
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		certPEM, keyPEM, err = c.issue(pkix.Name{CommonName: "virtkit-apiserver"}, all, x509.ExtKeyUsageServerAuth)
		if err == nil {
			err = writePair(dir, ServingCertFile, ServingKeyFile, certPEM, keyPEM)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	if c.Serving, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	c.AdminCert, c.AdminKey, err = readPair(dir, AdminCertFile, AdminKeyFile)
	if errors.Is(err, os.ErrNotExist) {
		c.AdminCert, c.AdminKey, err = c.IssueClientCert(AdminUser, []string{AdminGroup})
		if err == nil {
			err = writePair(dir, AdminCertFile, AdminKeyFile, c.AdminCert, c.AdminKey)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("admin certificate: %w", err)
	}
	return c, nil
}

// IssueClientCert returns a PEM client certificate and key for user in
// groups, signed by the CA.
func (c *Certificates) IssueClientCert(user string, groups []string) (certPEM, keyPEM []byte, err error) {
	if user == "" {
		return nil, nil, errors.New("client certificate: user required")
	}
	return c.issue(pkix.Name{CommonName: user, Organization: groups}, nil, x509.ExtKeyUsageClientAuth)
}

// ServerTLSConfig serves the serving certificate and verifies client
// certificates, when given, against the CA.
func (c *Certificates) ServerTLSConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(c.CA)
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{c.Serving},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    pool,
		NextProtos:   []string{"http/1.1"},
	}
}

func covers(cert *x509.Certificate, hosts []string) bool {
	for _, h := range hosts {
		if cert.VerifyHostname(h) != nil {
			return false
		}
	}
	return time.Now().Before(cert.NotAfter)
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func newCA() (certPEM, keyPEM []byte, err error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn, Subject: pkix.Name{CommonName: "virtkit-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func (c *Certificates) issue(subject pkix.Name, hosts []string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn, Subject: subject,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.CA, &key.PublicKey, c.caKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func readPair(dir, certFile, keyFile string) (certPEM, keyPEM []byte, err error) {
	if certPEM, err = os.ReadFile(filepath.Join(dir, certFile)); err != nil {
		return nil, nil, err
	}
	if keyPEM, err = os.ReadFile(filepath.Join(dir, keyFile)); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

func writePair(dir, certFile, keyFile string, certPEM, keyPEM []byte) error {
	if err := os.WriteFile(filepath.Join(dir, keyFile), keyPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, certFile), certPEM, 0o644)
}

func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, nil, errors.New("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, nil, errors.New("no PEM key")
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// Kubeconfig describes a kubeconfig with one cluster, user and context.
type Kubeconfig struct {
	Server    string // https://HOST:PORT
	CAPEM     []byte
	User      string
	CertPEM   []byte // client certificate, or
	KeyPEM    []byte
	Token     string // a bearer token
	Namespace string // the context's default namespace
}

// WriteKubeconfig writes k to path (mode 0600) in kubectl's format.
func WriteKubeconfig(path string, k Kubeconfig) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["virtkit"] = &clientcmdapi.Cluster{Server: k.Server, CertificateAuthorityData: k.CAPEM}
	user := k.User
	if user == "" {
		user = "virtkit-user"
	}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: k.CertPEM, ClientKeyData: k.KeyPEM, Token: k.Token}
	cfg.Contexts["virtkit"] = &clientcmdapi.Context{Cluster: "virtkit", AuthInfo: user, Namespace: k.Namespace}
	cfg.CurrentContext = "virtkit"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return os.Chmod(path, 0o600)
}
