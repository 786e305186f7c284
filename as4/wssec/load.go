package wssec

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"software.sslmate.com/src/go-pkcs12"
)

// KeyPair is a private key with its certificate and the rest of its
// chain, as read from PEM or PKCS#12 files.
type KeyPair struct {
	Key         crypto.Signer
	Certificate *x509.Certificate
	Chain       []*x509.Certificate
}

// LoadPEM reads a private key (PKCS#8, PKCS#1 or SEC 1 PEM) from keyFile
// and the certificate, optionally followed by its chain, from certFile.
func LoadPEM(keyFile, certFile string) (*KeyPair, error) {
	kb, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("wssec: reading the key: %w", err)
	}
	block, _ := pem.Decode(kb)
	if block == nil {
		return nil, fmt.Errorf("wssec: %s holds no PEM block", keyFile)
	}
	key, err := parseKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("wssec: %s: %w", keyFile, err)
	}
	certs, err := LoadCertificates(certFile)
	if err != nil {
		return nil, err
	}
	return &KeyPair{Key: key, Certificate: certs[0], Chain: certs[1:]}, nil
}

func parseKey(der []byte) (crypto.Signer, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, fmt.Errorf("unsupported key type %T", k)
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New("not a PKCS#8, PKCS#1 or SEC 1 private key")
}

// LoadCertificates reads the PEM certificates of a file (a trust store or
// a partner's certificate).
func LoadCertificates(file string) ([]*x509.Certificate, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("wssec: reading certificates: %w", err)
	}
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("wssec: %s: certificate %d: %w", file, len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("wssec: %s holds no PEM certificate", file)
	}
	return certs, nil
}

// LoadPKCS12 reads a PKCS#12 key store holding one private key entry
// (as keytool -importkeystore -deststoretype pkcs12 writes it).
func LoadPKCS12(file, password string) (*KeyPair, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("wssec: reading the key store: %w", err)
	}
	key, cert, chain, err := pkcs12.DecodeChain(b, password)
	if err != nil {
		return nil, fmt.Errorf("wssec: %s: %w", file, err)
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("wssec: %s: unsupported key type %T", file, key)
	}
	return &KeyPair{Key: s, Certificate: cert, Chain: chain}, nil
}

// LoadPKCS12TrustStore reads the certificates of a PKCS#12 trust store.
func LoadPKCS12TrustStore(file, password string) ([]*x509.Certificate, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("wssec: reading the trust store: %w", err)
	}
	certs, err := pkcs12.DecodeTrustStore(b, password)
	if err != nil {
		return nil, fmt.Errorf("wssec: %s: %w", file, err)
	}
	return certs, nil
}
