package invoicerdemo

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4client"
	"github.com/txinbox/txinbox/as4/wssec"
)

// The invoicer demo runs with WS-Security on both ends, as eDelivery
// partners do: the relay signs every INVOIC, encrypts it for the partner
// and verifies the partner's signed non-repudiation receipt; the partner
// decrypts, verifies and signs its receipts. The parent makes a throwaway
// CA and a certificate for each side and passes the directory to both
// children (--keys), which load them as PEM files like a deployment would.

// writeDemoPKI writes ca.pem, sender.key, sender.pem, partner.key and
// partner.pem to dir.
func writeDemoPKI(dir string) error {
	now := time.Now()
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "txinbox demo CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "ca.pem"), "CERTIFICATE", caDER); err != nil {
		return err
	}
	for i, name := range []string{"sender", "partner"} {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: "txinbox demo " + name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(filepath.Join(dir, name+".key"), "PRIVATE KEY", keyDER); err != nil {
			return err
		}
		if err := writePEM(filepath.Join(dir, name+".pem"), "CERTIFICATE", der); err != nil {
			return err
		}
	}
	return nil
}

func writePEM(file, typ string, der []byte) error {
	return os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// demoKeys loads one side's key pair and the CA from the --keys directory.
func demoKeys(dir, side string) (*wssec.KeyPair, *x509.CertPool, error) {
	kp, err := wssec.LoadPEM(filepath.Join(dir, side+".key"), filepath.Join(dir, side+".pem"))
	if err != nil {
		return nil, nil, err
	}
	cas, err := wssec.LoadCertificates(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return nil, nil, err
	}
	roots := x509.NewCertPool()
	for _, c := range cas {
		roots.AddCert(c)
	}
	return kp, roots, nil
}

// senderSecurity is the relay's: sign as the sender, encrypt for the
// partner, verify the partner's receipts.
func senderSecurity(dir string) (as4client.Security, error) {
	kp, roots, err := demoKeys(dir, "sender")
	if err != nil {
		return as4client.Security{}, err
	}
	partner, err := wssec.LoadCertificates(filepath.Join(dir, "partner.pem"))
	if err != nil {
		return as4client.Security{}, err
	}
	s, err := wssec.NewSigner(kp.Key, kp.Certificate)
	if err != nil {
		return as4client.Security{}, err
	}
	x, err := wssec.NewEncrypter(partner[0])
	if err != nil {
		return as4client.Security{}, err
	}
	v, err := wssec.NewVerifier(wssec.VerifyConfig{Roots: roots})
	if err != nil {
		return as4client.Security{}, err
	}
	return as4client.Security{Signer: s, Encrypter: x, ReceiptVerifier: v}, nil
}

// partnerSecurity is the partner endpoint's: decrypt with its key, verify
// signatures through the CA, require them, sign the receipts.
func partnerSecurity(dir string) (as4.SecurityConfig, error) {
	kp, roots, err := demoKeys(dir, "partner")
	if err != nil {
		return as4.SecurityConfig{}, err
	}
	d, err := wssec.NewDecrypter(kp.Key, kp.Certificate)
	if err != nil {
		return as4.SecurityConfig{}, err
	}
	v, err := wssec.NewVerifier(wssec.VerifyConfig{Roots: roots, Decrypter: d})
	if err != nil {
		return as4.SecurityConfig{}, err
	}
	s, err := wssec.NewSigner(kp.Key, kp.Certificate)
	if err != nil {
		return as4.SecurityConfig{}, err
	}
	return as4.SecurityConfig{Verifier: v, Signer: s, RequireSignature: true}, nil
}
