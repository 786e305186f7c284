package wssec

import (
	"crypto/x509"
	"path/filepath"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4/wssec/wssectest"
)

// TestDomibusKeyStores: Domibus' test key stores, converted from JKS with
// keytool, sign and verify each other through Domibus' trust store.
func TestDomibusKeyStores(t *testing.T) {
	blue, err := LoadPKCS12("testdata/domibus/blue_gw.p12", "test123")
	if err != nil {
		t.Fatal(err)
	}
	trusted, err := LoadPKCS12TrustStore("testdata/domibus/truststore.p12", "test123")
	if err != nil || len(trusted) != 2 {
		t.Fatalf("trust store: %d certificates, %v", len(trusted), err)
	}
	if _, err := LoadPKCS12("testdata/domibus/blue_gw.p12", "wrong"); err == nil {
		t.Fatal("a wrong password was accepted")
	}
	roots := x509.NewCertPool()
	for _, c := range trusted {
		roots.AddCert(c)
	}
	s, err := NewSigner(blue.Key, blue.Certificate)
	if err != nil {
		t.Fatal(err)
	}
	atts := testAttachments()
	env, err := s.Sign([]byte(userMessage), atts)
	if err != nil {
		t.Fatal(err)
	}
	in2020 := func() time.Time { return time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) }
	v, _ := NewVerifier(VerifyConfig{Roots: roots, Certificates: trusted, Now: in2020})
	res, err := v.Verify(env, atts)
	if err != nil || res.Certificate.Subject.CommonName != "blue_gw" {
		t.Fatalf("%v %+v", err, res)
	}
	// Domibus' blue_gw certificate expired on 2025-12-01.
	v, _ = NewVerifier(VerifyConfig{Roots: roots})
	_, err = v.Verify(env, atts)
	wantCode(t, err, FailedAuthentication, "expired")
}

func TestLoadPEM(t *testing.T) {
	p := wssectest.Get(t)
	dir := t.TempDir()
	_, certFile := wssectest.WriteFiles(t, dir, "leaf", nil, p.Leaf)
	der, _ := x509.MarshalPKCS8PrivateKey(p.LeafKey)
	keyFile := filepath.Join(dir, "leaf.key.pem")
	wssectest.Write(t, keyFile, pemBlock("PRIVATE KEY", der))
	kp, err := LoadPEM(keyFile, certFile)
	if err != nil || !kp.Certificate.Equal(p.Leaf) {
		t.Fatalf("%v", err)
	}
	if _, err := NewSigner(kp.Key, kp.Certificate); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSigner(kp.Key, p.OtherLeaf); err == nil {
		t.Fatal("a key was paired with another certificate")
	}
	if _, err := LoadPEM(certFile, certFile); err == nil {
		t.Fatal("a certificate was read as a key")
	}
}
