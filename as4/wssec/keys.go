package wssec

import (
	"bytes"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"math/big"
	"strings"
)

// signer finds the signing certificate named by the signature's KeyInfo
// and checks it against the trust store.
func (v *Verifier) signer(s *signature, sec *securityHeader) (*x509.Certificate, []*x509.Certificate, *Error) {
	str, err := s.keyInfo.child(nsWSSE, "SecurityTokenReference")
	if err != nil || str == nil {
		return nil, nil, authFailed("ds:KeyInfo must hold one wsse:SecurityTokenReference")
	}
	var cert *x509.Certificate
	var extra []*x509.Certificate
	var e *Error
	switch kids := str.elements(); {
	case len(kids) != 1:
		return nil, nil, authFailed("wsse:SecurityTokenReference must have exactly one child, found %d", len(kids))
	case kids[0].is(nsWSSE, "Reference"):
		cert, extra, e = tokenByReference(kids[0], sec)
	case kids[0].is(nsWSSE, "KeyIdentifier"):
		cert, e = v.certByKeyIdentifier(kids[0])
	case kids[0].is(nsDS, "X509Data"):
		cert, e = v.certByIssuerSerial(kids[0])
	default:
		return nil, nil, policyFailed("wsse:SecurityTokenReference with <%s> is not supported", kids[0].local)
	}
	if e != nil {
		return nil, nil, e
	}
	chain, e := v.trust(cert, extra)
	return cert, chain, e
}

// tokenByReference reads the wsse:BinarySecurityToken a wsse:Reference
// points to, which must be in the same security header.
func tokenByReference(ref *node, sec *securityHeader) (*x509.Certificate, []*x509.Certificate, *Error) {
	uri := ref.attr("", "URI")
	if !strings.HasPrefix(uri, "#") {
		return nil, nil, policyFailed("wsse:Reference URI=%q: only a #id of a BinarySecurityToken is supported", uri)
	}
	var bst *node
	for _, c := range sec.el.elements() {
		if c.is(nsWSSE, "BinarySecurityToken") && c.id() == uri[1:] {
			bst = c
		}
	}
	if bst == nil {
		return nil, nil, authFailed("wsse:Reference URI=%q: no wsse:BinarySecurityToken with this Id in the security header", uri)
	}
	if enc := bst.attr("", "EncodingType"); enc != "" && enc != encBase64 {
		return nil, nil, policyFailed("BinarySecurityToken EncodingType %q is not supported", enc)
	}
	der, err := decodeBase64(bst.textContent())
	if err != nil {
		return nil, nil, authFailed("BinarySecurityToken %q: %v", uri, err)
	}
	switch vt := bst.attr("", "ValueType"); vt {
	case tokenX509v3:
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, nil, authFailed("BinarySecurityToken %q: %v", uri, err)
		}
		return cert, nil, nil
	case tokenPKIPath:
		certs, err := parsePKIPath(der)
		if err != nil {
			return nil, nil, authFailed("BinarySecurityToken %q (PKIPath): %v", uri, err)
		}
		// A PkiPath is ordered from the anchor's side to the signer.
		return certs[len(certs)-1], certs[:len(certs)-1], nil
	default:
		return nil, nil, policyFailed("BinarySecurityToken ValueType %q is not supported (X509v3, X509PKIPathv1 are)", vt)
	}
}

// parsePKIPath reads a PkiPath: an ASN.1 SEQUENCE OF Certificate.
func parsePKIPath(der []byte) ([]*x509.Certificate, error) {
	var raws []asn1.RawValue
	rest, err := asn1.Unmarshal(der, &raws)
	switch {
	case err != nil:
		return nil, err
	case len(rest) > 0:
		return nil, fmt.Errorf("%d bytes after the PkiPath", len(rest))
	case len(raws) == 0:
		return nil, fmt.Errorf("empty PkiPath")
	}
	certs := make([]*x509.Certificate, len(raws))
	for i, r := range raws {
		if certs[i], err = x509.ParseCertificate(r.FullBytes); err != nil {
			return nil, fmt.Errorf("certificate %d: %w", i+1, err)
		}
	}
	return certs, nil
}

// certByKeyIdentifier finds a configured certificate by subject key
// identifier or SHA-1 thumbprint.
func (v *Verifier) certByKeyIdentifier(ki *node) (*x509.Certificate, *Error) {
	id, err := decodeBase64(ki.textContent())
	if err != nil {
		return nil, authFailed("wsse:KeyIdentifier: %v", err)
	}
	vt := ki.attr("", "ValueType")
	for _, c := range v.cfg.Certificates {
		switch vt {
		case keyIDSKI:
			if len(c.SubjectKeyId) > 0 && bytes.Equal(c.SubjectKeyId, id) {
				return c, nil
			}
		case keyIDThumbSHA1:
			if sum := sha1.Sum(c.Raw); bytes.Equal(sum[:], id) {
				return c, nil
			}
		default:
			return nil, policyFailed("wsse:KeyIdentifier ValueType %q is not supported", vt)
		}
	}
	return nil, authFailed("wsse:KeyIdentifier %s: no configured partner certificate matches", ki.textContent())
}

// certByIssuerSerial finds a configured certificate by issuer name and
// serial number.
func (v *Verifier) certByIssuerSerial(x509Data *node) (*x509.Certificate, *Error) {
	is, _ := x509Data.child(nsDS, "X509IssuerSerial")
	if is == nil {
		return nil, policyFailed("ds:X509Data without ds:X509IssuerSerial is not supported")
	}
	name, _ := is.child(nsDS, "X509IssuerName")
	serial, _ := is.child(nsDS, "X509SerialNumber")
	if name == nil || serial == nil {
		return nil, authFailed("ds:X509IssuerSerial lacks X509IssuerName or X509SerialNumber")
	}
	n, ok := new(big.Int).SetString(strings.TrimSpace(serial.textContent()), 10)
	if !ok {
		return nil, authFailed("ds:X509SerialNumber %q is not a decimal number", serial.textContent())
	}
	want, err := parseDN(name.textContent())
	if err != nil {
		return nil, authFailed("ds:X509IssuerName: %v", err)
	}
	for _, c := range v.cfg.Certificates {
		if c.SerialNumber.Cmp(n) == 0 && sameDN(want, c.Issuer) {
			return c, nil
		}
	}
	return nil, authFailed("no configured partner certificate has issuer %q and serial %s", strings.TrimSpace(name.textContent()), n)
}

// trust checks the certificate's validity and chain at the configured
// time and returns the chain.
func (v *Verifier) trust(cert *x509.Certificate, extra []*x509.Certificate) ([]*x509.Certificate, *Error) {
	inter := x509.NewCertPool()
	if v.cfg.Intermediates != nil {
		inter = v.cfg.Intermediates.Clone()
	}
	for _, c := range extra {
		inter.AddCert(c)
	}
	chains, err := cert.Verify(x509.VerifyOptions{
		Roots: v.cfg.Roots, Intermediates: inter, CurrentTime: v.cfg.Now(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	})
	if err != nil {
		return nil, authFailed("the signing certificate %q (serial %s) is not trusted: %v", cert.Subject.String(), cert.SerialNumber, err)
	}
	return chains[0], nil
}

// dnAttr is one attribute of a distinguished name: an OID or short name
// in upper case and its value.
type dnAttr struct{ typ, value string }

var dnNames = map[string]string{
	"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
	"2.5.4.5": "SERIALNUMBER", "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC",
	"1.2.840.113549.1.9.1": "EMAILADDRESS", "2.5.4.97": "ORGANIZATIONIDENTIFIER",
}

var dnAliases = map[string]string{"E": "EMAILADDRESS", "S": "ST", "OID.2.5.4.97": "ORGANIZATIONIDENTIFIER"}

// parseDN reads an RFC 4514 / RFC 2253 string as Java writes it
// ("CN=x, O=y"), as a set of attributes (the order is not compared).
func parseDN(s string) ([]dnAttr, error) {
	var out []dnAttr
	var cur strings.Builder
	var parts []string
	esc := false
	for _, r := range s {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case r == '\\':
			esc = true
		case r == ',' || r == ';' || r == '+':
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	parts = append(parts, cur.String())
	for _, p := range parts {
		k, val, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not TYPE=value", strings.TrimSpace(p))
		}
		out = append(out, dnAttr{normType(k), strings.TrimSpace(val)})
	}
	return out, nil
}

func normType(t string) string {
	t = strings.ToUpper(strings.TrimSpace(t))
	if n, ok := dnNames[t]; ok {
		return n
	}
	if n, ok := dnAliases[t]; ok {
		return n
	}
	return t
}

func sameDN(want []dnAttr, name pkix.Name) bool {
	var have []dnAttr
	for _, a := range name.Names {
		have = append(have, dnAttr{normType(a.Type.String()), strings.TrimSpace(fmt.Sprint(a.Value))})
	}
	if len(have) != len(want) {
		return false
	}
	used := make([]bool, len(have))
	for _, w := range want {
		found := false
		for i, h := range have {
			if !used[i] && h.typ == w.typ && strings.EqualFold(h.value, w.value) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
