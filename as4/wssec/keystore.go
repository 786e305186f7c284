package wssec

import (
	"bytes"
	"crypto"
	"crypto/sha1"
	"crypto/subtle"
	"crypto/x509"
	"encoding/asn1"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"unicode/utf16"

	"software.sslmate.com/src/go-pkcs12"
)

// keyEntry is one private key entry of a key store.
type keyEntry struct {
	alias string
	key   crypto.Signer
	chain []*x509.Certificate // the key's certificate first
}

// LoadKeyStore reads the private key entry named alias from a PKCS#12 or
// JKS key store (the format is read from the file), whose store and key
// password is password. An empty alias takes the only key entry; a key
// store with several (Domibus ships gateway_keystore.jks with blue_gw and
// red_gw) needs the alias, and the error names the aliases it holds.
// Aliases are compared ignoring case, as JKS stores them in lower case.
func LoadKeyStore(file, password, alias string) (*KeyPair, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("wssec: reading the key store: %w", err)
	}
	var entries []keyEntry
	if bytes.HasPrefix(b, jksMagic) {
		entries, err = readJKS(b, password)
	} else {
		entries, err = readPKCS12(b, password)
	}
	if err != nil {
		return nil, fmt.Errorf("wssec: %s: %w", file, err)
	}
	e, err := pickEntry(entries, alias)
	if err != nil {
		return nil, fmt.Errorf("wssec: %s: %w", file, err)
	}
	return &KeyPair{Key: e.key, Certificate: e.chain[0], Chain: e.chain[1:]}, nil
}

func pickEntry(entries []keyEntry, alias string) (keyEntry, error) {
	var aliases []string
	for _, e := range entries {
		if alias != "" && strings.EqualFold(e.alias, alias) {
			return e, nil
		}
		aliases = append(aliases, fmt.Sprintf("%q", e.alias))
	}
	switch {
	case len(entries) == 0:
		return keyEntry{}, errors.New("the key store holds no private key entry")
	case alias != "":
		return keyEntry{}, fmt.Errorf("the key store holds no private key entry with alias %q (it holds %s)", alias, strings.Join(aliases, ", "))
	case len(entries) > 1:
		return keyEntry{}, fmt.Errorf("the key store holds %d private keys (aliases %s): name the one to use by its alias", len(entries), strings.Join(aliases, ", "))
	}
	return entries[0], nil
}

// readPKCS12 reads the private key entries of a PKCS#12 key store: each
// key bag, its alias the bag's friendlyName, with the certificate of its
// public key and the chain completed from the other certificates.
func readPKCS12(b []byte, password string) ([]keyEntry, error) {
	//lint:ignore SA1019 ToPEM is the one API that returns every bag with its attributes; its key blocks' mislabelled bytes are what parseKey reads
	blocks, err := pkcs12.ToPEM(b, password)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	var entries []keyEntry
	for _, bl := range blocks {
		switch bl.Type {
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(bl.Bytes)
			if err != nil {
				return nil, err
			}
			certs = append(certs, c)
		case "PRIVATE KEY": // PKCS#1 or SEC 1 bytes, whatever the type says
			key, err := parseKey(bl.Bytes)
			if err != nil {
				return nil, err
			}
			entries = append(entries, keyEntry{alias: bl.Headers["friendlyName"], key: key})
		}
	}
	for i := range entries {
		if entries[i].chain = chainOf(entries[i].key, certs); entries[i].chain == nil {
			return nil, fmt.Errorf("no certificate for the private key %q", entries[i].alias)
		}
	}
	return entries, nil
}

// chainOf returns the certificate of key's public key followed by its
// issuers among certs, nil if certs has no certificate of key.
func chainOf(key crypto.Signer, certs []*x509.Certificate) []*x509.Certificate {
	type publicKey interface{ Equal(crypto.PublicKey) bool }
	pub, ok := key.Public().(publicKey)
	if !ok {
		return nil
	}
	i := slices.IndexFunc(certs, func(c *x509.Certificate) bool { return pub.Equal(c.PublicKey) })
	if i < 0 {
		return nil
	}
	chain := []*x509.Certificate{certs[i]}
	for last := certs[i]; !bytes.Equal(last.RawIssuer, last.RawSubject) && len(chain) <= len(certs); {
		j := slices.IndexFunc(certs, func(c *x509.Certificate) bool {
			return bytes.Equal(c.RawSubject, last.RawIssuer) && !slices.Contains(chain, c)
		})
		if j < 0 {
			break
		}
		last = certs[j]
		chain = append(chain, last)
	}
	return chain
}

// The JKS format (Sun's JavaKeyStore, which Domibus' key stores use): a
// big-endian header (magic, version 1 or 2, entry count), the entries, and
// a SHA-1 over the password, "Mighty Aphrodite" and everything before it.
// A private key entry's key is an EncryptedPrivateKeyInfo of Sun's
// KeyProtector: salt (20 bytes), the PKCS#8 key XORed with a SHA-1 key
// stream of the password and salt, and a SHA-1 of password and key.
var (
	jksMagic        = []byte{0xfe, 0xed, 0xfe, 0xed}
	oidKeyProtector = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 42, 2, 17, 1, 1}
)

// readJKS reads the private key entries of a JKS key store whose store
// and key password is password; trusted certificate entries are skipped.
func readJKS(b []byte, password string) ([]keyEntry, error) {
	pw := jksPassword(password)
	if len(b) < 12+sha1.Size {
		return nil, errors.New("JKS: truncated")
	}
	body, sum := b[:len(b)-sha1.Size], b[len(b)-sha1.Size:]
	h := sha1.New()
	h.Write(pw)
	h.Write([]byte("Mighty Aphrodite"))
	h.Write(body)
	if subtle.ConstantTimeCompare(h.Sum(nil), sum) != 1 {
		return nil, errors.New("JKS: the password is wrong or the key store was changed (its digest does not match)")
	}
	r := &jksReader{b: body[4:]}
	version, count := r.u32(), r.u32()
	if version != 1 && version != 2 {
		return nil, fmt.Errorf("JKS: unsupported version %d", version)
	}
	var entries []keyEntry
	for i := uint32(0); i < count && r.err == nil; i++ {
		e, isKey := r.entry(version, pw)
		if isKey && r.err == nil {
			entries = append(entries, e)
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("JKS: %w", r.err)
	}
	return entries, nil
}

// jksPassword is the password as JKS digests it: each UTF-16 code unit as
// two big-endian bytes.
func jksPassword(password string) []byte {
	var out []byte
	for _, u := range utf16.Encode([]rune(password)) {
		out = append(out, byte(u>>8), byte(u))
	}
	return out
}

// jksReader reads a JKS body; the first error stops it.
type jksReader struct {
	b   []byte
	err error
}

func (r *jksReader) next(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = errors.New("truncated")
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *jksReader) u32() uint32 {
	if b := r.next(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *jksReader) utf() string {
	n := r.next(2)
	if n == nil {
		return ""
	}
	return string(r.next(int(binary.BigEndian.Uint16(n))))
}

// cert reads a certificate of a version's layout (version 2 names its
// type first).
func (r *jksReader) cert(version uint32) *x509.Certificate {
	if version == 2 {
		if typ := r.utf(); typ != "X.509" && r.err == nil {
			r.err = fmt.Errorf("certificate type %q", typ)
		}
	}
	der := r.next(int(r.u32()))
	if r.err != nil {
		return nil
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		r.err = err
	}
	return c
}

// entry reads one entry; isKey is false for a trusted certificate.
func (r *jksReader) entry(version uint32, pw []byte) (e keyEntry, isKey bool) {
	tag := r.u32()
	e.alias = r.utf()
	r.next(8) // the entry's date
	switch tag {
	case 1:
		protected := r.next(int(r.u32()))
		n := r.u32()
		for i := uint32(0); i < n && r.err == nil; i++ {
			e.chain = append(e.chain, r.cert(version))
		}
		if r.err == nil {
			e.key, r.err = recoverJKSKey(protected, pw)
		}
		if r.err == nil && len(e.chain) == 0 {
			r.err = fmt.Errorf("the private key %q has no certificate", e.alias)
		}
		return e, true
	case 2:
		r.cert(version)
		return e, false
	}
	if r.err == nil {
		r.err = fmt.Errorf("entry %q has the unknown tag %d (a JCEKS secret key?)", e.alias, tag)
	}
	return e, false
}

// recoverJKSKey undoes Sun's KeyProtector.
func recoverJKSKey(protected, pw []byte) (crypto.Signer, error) {
	var info struct {
		Algo struct {
			Algorithm  asn1.ObjectIdentifier
			Parameters asn1.RawValue `asn1:"optional"`
		}
		Data []byte
	}
	if _, err := asn1.Unmarshal(protected, &info); err != nil {
		return nil, fmt.Errorf("the protected key: %w", err)
	}
	if !info.Algo.Algorithm.Equal(oidKeyProtector) {
		return nil, fmt.Errorf("the key is protected with %v, not JKS's key protector", info.Algo.Algorithm)
	}
	d := info.Data
	if len(d) < 2*sha1.Size {
		return nil, errors.New("the protected key is truncated")
	}
	salt, enc, check := d[:sha1.Size], d[sha1.Size:len(d)-sha1.Size], d[len(d)-sha1.Size:]
	plain := make([]byte, len(enc))
	stream := salt
	for i := range enc {
		if i%sha1.Size == 0 {
			s := sha1.Sum(append(slices.Clip(pw), stream...))
			stream = s[:]
		}
		plain[i] = enc[i] ^ stream[i%sha1.Size]
	}
	sum := sha1.Sum(append(slices.Clip(pw), plain...))
	if subtle.ConstantTimeCompare(sum[:], check) != 1 {
		return nil, errors.New("the key password is wrong (the key's digest does not match)")
	}
	return parseKey(plain)
}
