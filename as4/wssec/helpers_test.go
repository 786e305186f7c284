package wssec

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/txinbox/txinbox/as4/wssec/wssectest"
)

func verifierFor(t testing.TB, p *wssectest.PKI) *Verifier {
	t.Helper()
	v, err := NewVerifier(VerifyConfig{Roots: p.Roots(), Certificates: []*x509.Certificate{p.Leaf}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustSigner(t testing.TB, key *rsa.PrivateKey, cert *x509.Certificate) *Signer {
	t.Helper()
	s, err := NewSigner(key, cert)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
