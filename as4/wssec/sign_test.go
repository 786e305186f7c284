package wssec

import (
	"bytes"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4/wssec/wssectest"
)

const userMessage = `<?xml version="1.0" encoding="UTF-8"?>
<S12:Envelope xmlns:S12="http://www.w3.org/2003/05/soap-envelope" xmlns:eb="http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/">
  <S12:Header>
    <eb:Messaging S12:mustUnderstand="true">
      <eb:UserMessage>
        <eb:MessageInfo><eb:Timestamp>2026-11-30T10:00:00Z</eb:Timestamp><eb:MessageId>invoice-42@partner.example</eb:MessageId></eb:MessageInfo>
        <eb:PartyInfo>
          <eb:From><eb:PartyId type="urn:example:party">PARTNER</eb:PartyId><eb:Role>initiator</eb:Role></eb:From>
          <eb:To><eb:PartyId type="urn:example:party">US</eb:PartyId><eb:Role>responder</eb:Role></eb:To>
        </eb:PartyInfo>
        <eb:CollaborationInfo><eb:Service>urn:example:invoicing</eb:Service><eb:Action>Submit</eb:Action><eb:ConversationId>42</eb:ConversationId></eb:CollaborationInfo>
        <eb:PayloadInfo><eb:PartInfo href="cid:invoice"/><eb:PartInfo href="cid:scan"/></eb:PayloadInfo>
      </eb:UserMessage>
    </eb:Messaging>
  </S12:Header>
  <S12:Body/>
</S12:Envelope>`

func testAttachments() []Attachment {
	return []Attachment{
		{ContentID: "invoice", ContentType: "application/xml", Data: []byte("<?xml version=\"1.0\"?>\r\n<Invoice xmlns=\"urn:inv\"   b='2' a=\"1\"><ID>42</ID><!-- c --><Note>a &amp; b</Note></Invoice>\n")},
		{ContentID: "scan", ContentType: "application/octet-stream", Data: []byte{0x1f, 0x8b, 0, 1, 2, 3, 0xff}},
	}
}

func signed(t *testing.T) ([]byte, []Attachment) {
	t.Helper()
	p := wssectest.Get(t)
	atts := testAttachments()
	out, err := mustSigner(t, p.LeafKey, p.Leaf).Sign([]byte(userMessage), atts)
	if err != nil {
		t.Fatal(err)
	}
	return out, atts
}

func TestSignVerifyRoundTrip(t *testing.T) {
	p := wssectest.Get(t)
	out, atts := signed(t)
	res, err := verifierFor(t, p).Verify(out, atts)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !res.Signed || !res.Certificate.Equal(p.Leaf) || len(res.References) != 4 {
		t.Fatalf("result %+v", res)
	}
	if len(res.Chain) != 2 || !res.Chain[1].Equal(p.CA) {
		t.Fatalf("chain of %d", len(res.Chain))
	}
	for _, r := range res.References {
		if !bytes.HasPrefix(r.XML, []byte(`<ds:Reference xmlns:ds="http://www.w3.org/2000/09/xmldsig#" URI="`+r.URI+`">`)) {
			t.Fatalf("reference XML %s", r.XML)
		}
	}
}

func TestVerifyRefusesTampering(t *testing.T) {
	p := wssectest.Get(t)
	v := verifierFor(t, p)
	out, atts := signed(t)
	replace := func(old, new string) []byte {
		t.Helper()
		if !bytes.Contains(out, []byte(old)) {
			t.Fatalf("%q not in the signed envelope", old)
		}
		return bytes.Replace(out, []byte(old), []byte(new), 1)
	}
	otherAtts := func(i int, data string) []Attachment {
		a := append([]Attachment(nil), atts...)
		a[i].Data = []byte(data)
		return a
	}
	cases := []struct {
		name   string
		env    []byte
		atts   []Attachment
		code   string
		detail string
	}{
		{"header value", replace("invoice-42@partner.example", "invoice-43@partner.example"), atts, FailedAuthentication, "digest does not match"},
		{"body content", replace("<S12:Body ", `<S12:Body data="x" `), atts, FailedAuthentication, "digest does not match"},
		{"xml attachment byte", out, otherAtts(0, strings.Replace(string(atts[0].Data), "42", "43", 1)), FailedAuthentication, "digest does not match"},
		{"binary attachment byte", out, otherAtts(1, "\x1f\x8b\x00\x01\x02\x04\xff"), FailedAuthentication, "digest does not match"},
		{"attachment missing", out, atts[:1], FailedAuthentication, "no MIME part"},
		{"unsigned attachment added", out, append(append([]Attachment(nil), atts...), Attachment{ContentID: "extra", Data: []byte("x")}), PolicyNoncompliance, "does not cover the MIME part <extra>"},
		{"signature value", replace("<ds:SignatureValue>", "<ds:SignatureValue>AAAA"), atts, FailedAuthentication, "signature value does not verify"},
		{"signed info", replace(`<ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"></ds:DigestMethod>`, `<ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"/>`+"\n"), atts, FailedAuthentication, "signature value does not verify"},
		{"second Body", replace("</S12:Envelope>", "<S12:Body/></S12:Envelope>"), atts, InvalidHeader, "exactly one SOAP Body"},
		{"second Messaging", replace("</S12:Header>", `<eb:Messaging/></S12:Header>`), atts, InvalidHeader, "more than one <Messaging>"},
		{"doctype", append([]byte("<!DOCTYPE x>"), out[bytes.Index(out, []byte("<S12:Envelope")):]...), atts, InvalidHeader, "DOCTYPE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.Verify(c.env, c.atts)
			wantCode(t, err, c.code, c.detail)
		})
	}
}

// TestVerifyRefusesWrapping moves the signed Body into a header block and
// puts another Body in its place; then gives the new Body the signed
// Body's Id.
func TestVerifyRefusesWrapping(t *testing.T) {
	p := wssectest.Get(t)
	v := verifierFor(t, p)
	out, atts := signed(t)
	doc, err := parse(out)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := readSOAP(doc)
	bodyTag := string(out[env.body.startTag[0]:env.body.startTag[1]])
	bodyID := env.body.id()
	if !strings.HasSuffix(bodyTag, "/>") {
		t.Fatalf("body %s is not empty", bodyTag)
	}
	signedBody := `<x:Wrapper xmlns:x="urn:evil">` + bodyTag + `</x:Wrapper>`
	wrapped := strings.Replace(string(out), bodyTag, `<S12:Body><evil>pay me</evil></S12:Body>`, 1)
	wrapped = strings.Replace(wrapped, "</S12:Header>", signedBody+"</S12:Header>", 1)
	_, err = v.Verify([]byte(wrapped), atts)
	wantCode(t, err, PolicyNoncompliance, "does not cover the SOAP Body")

	dupID := strings.Replace(wrapped, `<S12:Body><evil>`, `<S12:Body xmlns:wsu="`+nsWSU+`" wsu:Id="`+bodyID+`"><evil>`, 1)
	_, err = v.Verify([]byte(dupID), atts)
	wantCode(t, err, FailedAuthentication, "occurs on more than one element")
}

func TestVerifyRefusesCertificates(t *testing.T) {
	p := wssectest.Get(t)
	out, atts := signed(t)
	otherRoots := x509.NewCertPool()
	otherRoots.AddCert(p.OtherCA)
	v, _ := NewVerifier(VerifyConfig{Roots: otherRoots})
	_, err := v.Verify(out, atts)
	wantCode(t, err, FailedAuthentication, "not trusted")

	later, _ := NewVerifier(VerifyConfig{Roots: p.Roots(), Now: func() time.Time { return time.Now().Add(2 * 365 * 24 * time.Hour) }})
	_, err = later.Verify(out, atts)
	wantCode(t, err, FailedAuthentication, "expired")

	for _, s := range []*Signer{mustSigner(t, p.ExpiredKey, p.Expired), mustSigner(t, p.OtherLeafKey, p.OtherLeaf)} {
		env, err := s.Sign([]byte(userMessage), atts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = verifierFor(t, p).Verify(env, atts)
		wantCode(t, err, FailedAuthentication, "not trusted")
	}
}

// TestSignIsDeterministic: a resend signs to the same bytes, so that a
// replayed receipt's references match it.
func TestSignIsDeterministic(t *testing.T) {
	a, _ := signed(t)
	b, _ := signed(t)
	if !bytes.Equal(a, b) {
		t.Fatal("signing the same envelope twice gave different bytes")
	}
}

// TestLargeXMLAttachment: an XML payload with more elements than an
// envelope may have is canonicalized as a stream, signed and verified.
func TestLargeXMLAttachment(t *testing.T) {
	p := wssectest.Get(t)
	var b strings.Builder
	b.WriteString(`<Lines xmlns="urn:inv">`)
	for i := 0; i < maxElements+10; i++ {
		b.WriteString(`<L n="1">x</L>`)
	}
	b.WriteString(`</Lines>`)
	atts := []Attachment{{ContentID: "big", ContentType: "application/xml", Data: []byte(b.String())}}
	env, err := mustSigner(t, p.LeafKey, p.Leaf).Sign([]byte(userMessage), atts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifierFor(t, p).Verify(env, atts); err != nil {
		t.Fatal(err)
	}
	atts[0].Data = bytes.Replace(atts[0].Data, []byte(`n="1"`), []byte(`n="2"`), 1)
	_, err = verifierFor(t, p).Verify(env, atts)
	wantCode(t, err, FailedAuthentication, "digest does not match")
}
