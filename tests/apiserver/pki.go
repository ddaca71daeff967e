package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the paths of everything the apiserver and its clients need.
type pki struct {
	CACert, ServingCert, ServingKey, AdminCert, AdminKey, SAPublic, SAPrivate string
	caPEM, adminCertPEM, adminKeyPEM                                          []byte
}

type keyPair struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

func generatePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := newKeyPair(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "odh-test-apiserver-ca"},
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}, nil)
	if err != nil {
		return nil, err
	}
	serving, err := newKeyPair(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), net.ParseIP("10.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca)
	if err != nil {
		return nil, err
	}
	admin, err := newKeyPair(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca)
	if err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saPrivDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}

	p := pkiPaths(dir)
	p.caPEM, p.adminCertPEM, p.adminKeyPEM = ca.certPEM, admin.certPEM, admin.keyPEM
	files := map[string][]byte{
		p.CACert:      ca.certPEM,
		p.ServingCert: serving.certPEM,
		p.ServingKey:  serving.keyPEM,
		p.AdminCert:   admin.certPEM,
		p.AdminKey:    admin.keyPEM,
		p.SAPublic:    pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}),
		p.SAPrivate:   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saPrivDER}),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func pkiPaths(dir string) *pki {
	return &pki{
		CACert:      filepath.Join(dir, "ca.crt"),
		ServingCert: filepath.Join(dir, "apiserver.crt"),
		ServingKey:  filepath.Join(dir, "apiserver.key"),
		AdminCert:   filepath.Join(dir, "admin.crt"),
		AdminKey:    filepath.Join(dir, "admin.key"),
		SAPublic:    filepath.Join(dir, "sa.pub"),
		SAPrivate:   filepath.Join(dir, "sa.key"),
	}
}

// hasPKI says whether an earlier start left every file of its PKI in dir.
func hasPKI(dir string) bool {
	p := pkiPaths(dir)
	for _, path := range []string{p.CACert, p.ServingCert, p.ServingKey, p.AdminCert, p.AdminKey, p.SAPublic, p.SAPrivate} {
		if _, err := os.Stat(path); err != nil {
			return false
		}
	}
	return true
}

// loadPKI takes the PKI an earlier start wrote to dir (a restart keeps its clients' trust).
func loadPKI(dir string) (*pki, error) {
	p := pkiPaths(dir)
	var err error
	if p.caPEM, err = os.ReadFile(p.CACert); err != nil {
		return nil, err
	}
	if p.adminCertPEM, err = os.ReadFile(p.AdminCert); err != nil {
		return nil, err
	}
	if p.adminKeyPEM, err = os.ReadFile(p.AdminKey); err != nil {
		return nil, err
	}
	return p, nil
}

// newKeyPair signs template with parent (self-signed when parent is nil).
func newKeyPair(template *x509.Certificate, parent *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	template.SerialNumber = serial
	template.NotBefore = time.Now().Add(-time.Hour)
	template.NotAfter = time.Now().Add(10 * 365 * 24 * time.Hour)
	signerCert, signerKey := template, key
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, signerCert, &key.PublicKey, signerKey)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}
