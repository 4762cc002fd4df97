package apiserver

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// NodeTLSConfig returns the TLS configuration the API server uses towards
// node agents' endpoints (GenericOptions.NodeTLS): a client certificate for
// NodeClientUser issued now by the CA, and the CA as the only root.
func (c *Certificates) NodeTLSConfig() (*tls.Config, error) {
	certPEM, keyPEM, err := c.issue(pkix.Name{CommonName: NodeClientUser}, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, fmt.Errorf("node client certificate: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("node client certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(c.CA)
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, RootCAs: pool}, nil
}

// IssueServingCert returns a PEM serving certificate and key for hosts
// (names and IPs), signed by the CA: a node agent endpoint's.
func (c *Certificates) IssueServingCert(commonName string, hosts []string) (certPEM, keyPEM []byte, err error) {
	if len(hosts) == 0 {
		return nil, nil, errors.New("serving certificate: hosts required")
	}
	return c.issue(pkix.Name{CommonName: commonName}, hosts, x509.ExtKeyUsageServerAuth)
}

// NodeCertFiles are the file names of node NAME's endpoint certificate in
// a certificate directory.
func NodeCertFiles(node string) (certFile, keyFile string) {
	return "node-" + node + ".crt", "node-" + node + ".key"
}

// EnsureNodeCertificates returns the CA and node's endpoint certificate
// from dir: the files of NodeCertFiles when they exist and cover hosts, or
// else a certificate issued with the CA key in dir (CAKeyFile) and written
// there. A directory without the CA certificate is an error: the node must
// trust the CA the API server's client certificate comes from.
func EnsureNodeCertificates(dir, node string, hosts []string) (caPEM, certPEM, keyPEM []byte, err error) {
	certFile, keyFile := NodeCertFiles(node)
	caPEM, err = os.ReadFile(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("CA certificate: %w", err)
	}
	certPEM, keyPEM, err = readPair(dir, certFile, keyFile)
	if err == nil {
		if cert, _, perr := parsePair(certPEM, keyPEM); perr == nil && covers(cert, hosts) {
			return caPEM, certPEM, keyPEM, nil
		}
	}
	caKeyPEM, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("no usable %s in %s, and no CA key to issue one: %w", certFile, dir, err)
	}
	c := &Certificates{CAPEM: caPEM}
	if c.CA, c.caKey, err = parsePair(caPEM, caKeyPEM); err != nil {
		return nil, nil, nil, fmt.Errorf("CA %s: %w", filepath.Join(dir, CACertFile), err)
	}
	if certPEM, keyPEM, err = c.IssueServingCert("virtkit-node-"+node, hosts); err != nil {
		return nil, nil, nil, err
	}
	if err := writePair(dir, certFile, keyFile, certPEM, keyPEM); err != nil {
		return nil, nil, nil, fmt.Errorf("node certificate: %w", err)
	}
	return caPEM, certPEM, keyPEM, nil
}
