package serve

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/wssec"
	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// serveSecurity are the endpoint's WS-Security flags: one configuration
// for the whole endpoint (the agreements say which partner must sign or
// encrypt, not with which keys).
type serveSecurity struct {
	// Key and Cert are our private key and certificate (PEM files), or
	// Keystore a PKCS#12 file whose password is in KeystorePasswordFile
	// or the environment variable TXINBOX_AS4_KEYSTORE_PASSWORD. They
	// decrypt requests and sign receipts.
	Key, Cert, Keystore, KeystorePasswordFile string
	// KeyAlias names the private key entry of Keystore (PKCS#12 or JKS)
	// to use; empty: its only one.
	KeyAlias string
	// Trust is a PEM bundle of the certificates and CAs whose signatures
	// are accepted. Setting it turns verification on and requires a
	// verified signature of every user message, unless AllowUnsigned.
	Trust string
	// AllowUnsigned accepts user messages without a signature although
	// Trust is set (agreements may still require one).
	AllowUnsigned bool
	// AllowSHA1 accepts RSA-SHA1 signatures and SHA-1 digests.
	AllowSHA1 bool
	// keystorePassword is TXINBOX_AS4_KEYSTORE_PASSWORD.
	keystorePassword string
}

func (s *serveSecurity) register(fs interface {
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
}, env *clikit.Env) {
	fs.StringVar(&s.Key, "as4-key", "", "our private key (PEM) for decrypting requests and signing receipts, with --as4-cert")
	fs.StringVar(&s.Cert, "as4-cert", "", "our certificate (PEM), with --as4-key")
	fs.StringVar(&s.Keystore, "as4-keystore", "", "our key and certificate as a PKCS#12 or JKS key store (instead of --as4-key/--as4-cert); password from --as4-keystore-password-file or env TXINBOX_AS4_KEYSTORE_PASSWORD")
	fs.StringVar(&s.KeystorePasswordFile, "as4-keystore-password-file", "", "file holding the --as4-keystore password")
	fs.StringVar(&s.KeyAlias, "as4-key-alias", "", "alias of our key in --as4-keystore (default: its only key)")
	fs.StringVar(&s.Trust, "as4-trust", "", "PEM bundle of trusted partner certificates and CAs; turns WS-Security verification on and requires a verified signature of every message (see --as4-allow-unsigned)")
	fs.BoolVar(&s.AllowUnsigned, "as4-allow-unsigned", false, "with --as4-trust, accept messages without a signature (a signed one is still verified; agreements may still require signatures)")
	fs.BoolVar(&s.AllowSHA1, "as4-allow-sha1", false, "accept RSA-SHA1 signatures and SHA-1 digests")
	s.keystorePassword = env.Getenv("TXINBOX_AS4_KEYSTORE_PASSWORD")
}

func (s *serveSecurity) check() error {
	switch {
	case (s.Key == "") != (s.Cert == ""):
		return errors.New("--as4-key and --as4-cert go together")
	case s.Keystore != "" && s.Key != "":
		return errors.New("--as4-keystore and --as4-key/--as4-cert are alternatives")
	case (s.KeystorePasswordFile != "" || s.KeyAlias != "") && s.Keystore == "":
		return errors.New("--as4-keystore-password-file and --as4-key-alias need --as4-keystore")
	case s.AllowUnsigned && s.Trust == "":
		return errors.New("--as4-allow-unsigned needs --as4-trust (without a trust store no signature is verified or required)")
	case s.Trust == "" && (s.Key != "" || s.Keystore != "" || s.AllowSHA1):
		return errors.New("--as4-key, --as4-keystore and --as4-allow-sha1 need --as4-trust (the certificates whose signatures are accepted)")
	}
	return nil
}

// config builds the endpoint's as4.SecurityConfig; the zero value
// without --as4-trust.
func (s *serveSecurity) config(requireSignature bool) (as4.SecurityConfig, error) {
	if s.Trust == "" {
		return as4.SecurityConfig{}, nil
	}
	certs, err := wssec.LoadCertificates(s.Trust)
	if err != nil {
		return as4.SecurityConfig{}, fmt.Errorf("--as4-trust: %w", err)
	}
	roots := x509.NewCertPool()
	for _, c := range certs {
		roots.AddCert(c)
	}
	vc := wssec.VerifyConfig{Roots: roots, Certificates: certs, AllowSHA1: s.AllowSHA1}
	var kp *wssec.KeyPair
	switch {
	case s.Keystore != "":
		pw := s.keystorePassword
		if s.KeystorePasswordFile != "" {
			b, err := os.ReadFile(s.KeystorePasswordFile)
			if err != nil {
				return as4.SecurityConfig{}, fmt.Errorf("--as4-keystore-password-file: %w", err)
			}
			pw = strings.TrimRight(string(b), "\r\n")
		}
		if kp, err = wssec.LoadKeyStore(s.Keystore, pw, s.KeyAlias); err != nil {
			return as4.SecurityConfig{}, fmt.Errorf("--as4-keystore: %w (--as4-key-alias names the key)", err)
		}
	case s.Key != "":
		if kp, err = wssec.LoadPEM(s.Key, s.Cert); err != nil {
			return as4.SecurityConfig{}, fmt.Errorf("--as4-key/--as4-cert: %w", err)
		}
	}
	var signer *wssec.Signer
	if kp != nil {
		if vc.Decrypter, err = wssec.NewDecrypter(kp.Key, kp.Certificate); err != nil {
			return as4.SecurityConfig{}, fmt.Errorf("--as4-key: %w", err)
		}
		if signer, err = wssec.NewSigner(kp.Key, kp.Certificate); err != nil {
			return as4.SecurityConfig{}, fmt.Errorf("--as4-key: %w", err)
		}
	}
	v, err := wssec.NewVerifier(vc)
	if err != nil {
		return as4.SecurityConfig{}, fmt.Errorf("--as4-trust: %w", err)
	}
	return as4.SecurityConfig{Verifier: v, Signer: signer, RequireSignature: requireSignature}, nil
}
