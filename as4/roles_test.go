package as4_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/as4"
)

// securityFor is a wsse:Security header block marked mustUnderstand, with
// the role attribute attr (`S12:role="..."`, `S11:actor="..."`, or "").
func securityFor(prefix, attr string) string {
	return fmt.Sprintf(`<wsse:Security xmlns:wsse="%s" %s:mustUnderstand="1" %s><wsse:BinarySecurityToken>AAAA</wsse:BinarySecurityToken></wsse:Security>`,
		as4.NamespaceWSSE, prefix, attr)
}

// otherRoleSignature is a wsse:Security block for another role, marked
// mustUnderstand, holding an intermediary's signature.
func otherRoleSignature(prefix, attr string) string {
	return fmt.Sprintf(`<wsse:Security xmlns:wsse="%s" %s:mustUnderstand="1" %s>`, as4.NamespaceWSSE, prefix, attr) +
		`<ds:Signature xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:SignedInfo>` +
		`<ds:CanonicalizationMethod Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"/><ds:SignatureMethod Algorithm="http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"/>` +
		`<ds:Reference URI="#other-role"><ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"/><ds:DigestValue>b3RoZXI=</ds:DigestValue></ds:Reference>` +
		`</ds:SignedInfo><ds:SignatureValue>c2ln</ds:SignatureValue></ds:Signature></wsse:Security>`
}

// TestSecurityForAnotherRoleIgnored: a wsse:Security block marked
// mustUnderstand but addressed to another SOAP role (SOAP 1.2 role, SOAP
// 1.1 actor) is not targeted at this node and is ignored (SOAP 1.2 Part 1
// §5.2.3); one addressed to next, to ultimateReceiver or to no role is
// ours and refused with a MustUnderstand fault, in both SOAP versions.
func TestSecurityForAnotherRoleIgnored(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{})
	cases := []struct {
		soap11 bool
		attr   string
		ours   bool
	}{
		{false, `S12:role="urn:example:gateway"`, false},
		{false, `S12:role="http://www.w3.org/2003/05/soap-envelope/role/none"`, false},
		{false, `S12:role="http://www.w3.org/2003/05/soap-envelope/role/next"`, true},
		{false, `S12:role="http://www.w3.org/2003/05/soap-envelope/role/ultimateReceiver"`, true},
		{false, ``, true},
		// In SOAP 1.2 the role is S12:role: an S12:actor names no role.
		{false, `S12:actor="urn:example:gateway"`, true},
		{true, `S11:actor="http://example.com/gateway"`, false},
		{true, `S11:actor="http://schemas.xmlsoap.org/soap/actor/next"`, true},
		{true, ``, true},
		// In SOAP 1.1 the role is S11:actor.
		{true, `S11:role="http://example.com/gateway"`, true},
	}
	stored := 0
	for _, c := range cases {
		prefix := "S12"
		if c.soap11 {
			prefix = "S11"
		}
		m := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<a/>")}, soap11: c.soap11, security: securityFor(prefix, c.attr)}
		body, ct := m.mime(false)
		r := post(t, e.url, ct, body)
		if !c.ours {
			wantReceipt(t, r, m.id)
			stored++
			continue
		}
		wantError(t, r, http.StatusInternalServerError, as4.PolicyNoncompliance)
		if !strings.Contains(string(r.body), prefix+":MustUnderstand") {
			t.Errorf("%s %q: no MustUnderstand fault:\n%s", prefix, c.attr, r.body)
		}
	}
	if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != stored {
		t.Errorf("%d stored messages, want %d", n, stored)
	}
}

// TestSignedWithSecurityForAnotherRole: a signed message that also
// carries a wsse:Security block for another role, marked mustUnderstand,
// is verified by its own block and accepted; its receipt holds the
// references of the signature addressed to this node, also when the
// endpoint does not verify (AcceptUnverifiedSecurity) and the other
// role's block comes first.
func TestSignedWithSecurityForAnotherRole(t *testing.T) {
	t.Parallel()
	for _, o := range []options{{security: securedEndpoint(t, true)}, {acceptUnverified: true}} {
		signedForAnotherRole(t, newSQLite(t, o))
	}
}

func signedForAnotherRole(t *testing.T, e *endpoint) {
	for _, soap11 := range []bool{false, true} {
		prefix, attr := "S12", `S12:role="urn:example:gateway"`
		if soap11 {
			prefix, attr = "S11", `S11:actor="http://example.com/gateway"`
		}
		m := userMessage{id: newID(), from: "partner", payloads: [][]byte{[]byte("<a/>")}, soap11: soap11}
		body, ct, _ := signedMIME(t, m)
		// The other role's block goes first in the Header (the signature
		// does not cover it).
		header := "<" + prefix + ":Header>"
		body = []byte(strings.Replace(string(body), header, header+otherRoleSignature(prefix, attr), 1))
		r := post(t, e.url, ct, body)
		wantReceipt(t, r, m.id)
		if !strings.Contains(string(r.body), "NonRepudiationInformation") || strings.Contains(string(r.body), "#other-role") {
			t.Errorf("%s: the receipt is not a non-repudiation receipt of our signature:\n%s", prefix, r.body)
		}
	}
}

// TestSecurityRefusalSaysWhy: with a trust store configured, a
// wsse:Security block that must be understood but holds nothing the
// endpoint processes is refused for that reason, not as if the endpoint
// verified nothing; without one, the refusal says no trust store is
// configured.
func TestSecurityRefusalSaysWhy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		o             options
		want, wantNot string
	}{
		{"verifier", options{security: securedEndpoint(t, false)}, "holds neither a ds:Signature nor encrypted data", "does not verify signatures"},
		{"none", options{}, "does not verify signatures or decrypt (no trust store is configured)", "holds neither"},
	} {
		e := newSQLite(t, c.o)
		m := userMessage{id: newID(), from: "partner", payloads: [][]byte{[]byte("<a/>")}, security: securityFor("S12", "")}
		body, ct := m.mime(false)
		r := post(t, e.url, ct, body)
		wantError(t, r, http.StatusInternalServerError, as4.PolicyNoncompliance)
		if !strings.Contains(string(r.body), c.want) || strings.Contains(string(r.body), c.wantNot) {
			t.Errorf("%s: the refusal does not say %q (or says %q):\n%s", c.name, c.want, c.wantNot, r.body)
		}
	}
}
