package wssec

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"sync"
	"testing"
	"time"
)

// testPKI is a CA with a signing certificate, and a second, unrelated CA
// with its own leaf, made once per test process.
type testPKI struct {
	ca, otherCA        *x509.Certificate
	caKey, otherKey    *rsa.PrivateKey
	leaf, otherLeaf    *x509.Certificate
	leafKey, otherLKey *rsa.PrivateKey
	expired            *x509.Certificate // signed by ca, expired
	expiredKey         *rsa.PrivateKey
}

var (
	pkiOnce sync.Once
	pki     testPKI
)

func newKey(t testing.TB) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newCert(t testing.TB, tmpl *x509.Certificate, parent *x509.Certificate, pub *rsa.PublicKey, signer *rsa.PrivateKey) *x509.Certificate {
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var serial int64 = 1000

func template(cn string, ca bool, from, to time.Time) *x509.Certificate {
	serial++
	return &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: []string{"txinbox test"}, Country: []string{"BE"}},
		NotBefore: from, NotAfter: to, IsCA: ca, BasicConstraintsValid: true,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		SubjectKeyId: big.NewInt(serial * 7919).Bytes(),
	}
}

func getPKI(t testing.TB) *testPKI {
	t.Helper()
	pkiOnce.Do(func() {
		now := time.Now()
		from, to := now.Add(-time.Hour), now.Add(24*time.Hour*365)
		pki.caKey, pki.otherKey = newKey(t), newKey(t)
		pki.ca = newCert(t, template("txinbox test CA", true, from, to), nil, &pki.caKey.PublicKey, pki.caKey)
		pki.otherCA = newCert(t, template("other CA", true, from, to), nil, &pki.otherKey.PublicKey, pki.otherKey)
		pki.leafKey, pki.otherLKey, pki.expiredKey = newKey(t), newKey(t), newKey(t)
		pki.leaf = newCert(t, template("partner-a", false, from, to), pki.ca, &pki.leafKey.PublicKey, pki.caKey)
		pki.otherLeaf = newCert(t, template("intruder", false, from, to), pki.otherCA, &pki.otherLKey.PublicKey, pki.otherKey)
		pki.expired = newCert(t, template("partner-old", false, now.Add(-48*time.Hour), now.Add(-24*time.Hour)), pki.ca, &pki.expiredKey.PublicKey, pki.caKey)
	})
	if pki.leaf == nil {
		t.Fatal("test PKI not made")
	}
	return &pki
}

func (p *testPKI) verifier(t testing.TB) *Verifier {
	roots := x509.NewCertPool()
	roots.AddCert(p.ca)
	v, err := NewVerifier(VerifyConfig{Roots: roots, Certificates: []*x509.Certificate{p.leaf}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (p *testPKI) signer(t testing.TB) *Signer {
	s, err := NewSigner(p.leafKey, p.leaf)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
