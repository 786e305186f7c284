package as4

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4/internal/xsdcheck"
	"github.com/txinbox/txinbox/edi/ebms"
)

var schemaTestUser = UserMessage{
	MPC: "urn:test:mpc", Timestamp: "2026-11-30T10:00:00.123Z", MessageID: "m1@test", RefToMessageID: "m0@test",
	From:         ebms.Party{IDs: []ebms.PartyID{{Type: "urn:test", ID: "sender"}}, Role: "http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/initiator"},
	To:           ebms.Party{IDs: []ebms.PartyID{{ID: "receiver"}}, Role: "http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/responder"},
	AgreementRef: AgreementRef{Value: "urn:test:agreement", PMode: "pm1"},
	Service:      ebms.Service{Type: "urn:test:t", Value: "urn:test:service"}, Action: "Submit", ConversationID: "c1",
	Properties: []Property{{Name: "originalSender", Value: "urn:x:1"}},
	PartInfos: []PartInfo{{Href: "cid:p1", Schema: PartSchema{Location: "http://example.test/s.xsd"}, Description: Description{Lang: "en", Value: "an invoice"},
		Properties: []Property{{Name: "MimeType", Value: "application/xml"}}}},
}

// TestSignalsValidAgainstSchemas validates every kind of signal the
// endpoint writes, in both SOAP versions, against the official schemas.
func TestSignalsValidAgainstSchemas(t *testing.T) {
	xsdcheck.Available(t)
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, v := range []soapVersion{soap11, soap12} {
		xsdcheck.Validate(t, "receipt "+v.prefix, receiptEnvelope(v, "r1@txinbox", at, &schemaTestUser, nil))
		for code := range errorInfo {
			f := senderFailure(code, "what is wrong <&>")
			f.RefToMessageID = "m1@test"
			xsdcheck.Validate(t, "error "+string(code)+" "+v.prefix, errorEnvelope(v, "e1@txinbox", at, f))
		}
		xsdcheck.Validate(t, "error without ref "+v.prefix, errorEnvelope(v, "e1@txinbox", at, senderFailure(InvalidHeader, "")))
		xsdcheck.Validate(t, "receiver error "+v.prefix, errorEnvelope(v, "e1@txinbox", at, receiverFailure(503, "db down", nil)))
		w := &failure{Code: EmptyMessagePartitionChannel, Status: 200, Warning: true, RefToMessageID: "p1", Detail: "nothing"}
		xsdcheck.Validate(t, "warning "+v.prefix, errorEnvelope(v, "e1@txinbox", at, w))
		mu := checkMustUnderstand(&envelope{blocks: []headerBlock{{name: xml.Name{Space: NamespaceWSSE, Local: "Security"}, mustUnderstand: true}, {name: xml.Name{Space: "urn:x", Local: "Other"}, mustUnderstand: true}}}, securityPolicy{})
		xsdcheck.Validate(t, "MustUnderstand fault "+v.prefix, errorEnvelope(v, "e1@txinbox", at, mu))
	}
}

// TestNonRepudiationReceiptFromSamples builds the receipts for messages
// phase4 and Domibus signed: each holds every ds:Reference of the
// request's signature, digest for digest, and is valid against the
// schemas in both SOAP versions.
func TestNonRepudiationReceiptFromSamples(t *testing.T) {
	for _, tt := range []struct {
		file string
		refs int
	}{{"phase4/TestMimeMessage12.xml", 1}, {"domibus/bst_x509v3_incoming_message.xml", 3}} {
		doc, err := os.ReadFile(filepath.Join("testdata", tt.file))
		must(t, err)
		env, f := readEnvelope(doc)
		if f != nil {
			t.Fatal(f)
		}
		if len(env.signatureRefs) != tt.refs {
			t.Fatalf("%s: %d ds:References read, want its %d", tt.file, len(env.signatureRefs), tt.refs)
		}
		nrr, err := NonRepudiationInformation(env.signatureRefs)
		must(t, err)
		u := env.user.userMessage()
		for _, v := range []soapVersion{soap11, soap12} {
			rc := receiptEnvelope(v, "r1@txinbox", time.Now(), &u, nrr)
			xsdcheck.Validate(t, tt.file+" NRR receipt "+v.prefix, rc)
			var got struct {
				Refs []struct {
					URI    string `xml:"URI,attr"`
					Digest string `xml:"http://www.w3.org/2000/09/xmldsig# DigestValue"`
					Algo   struct {
						Algorithm string `xml:"Algorithm,attr"`
					} `xml:"http://www.w3.org/2000/09/xmldsig# DigestMethod"`
				} `xml:"Header>Messaging>SignalMessage>Receipt>NonRepudiationInformation>MessagePartNRInformation>Reference"`
			}
			must(t, xml.Unmarshal(rc, &got))
			want := regexp.MustCompile(`(?s)<ds:Reference URI="([^"]*)">.*?<ds:DigestMethod Algorithm="([^"]*)"/>\s*<ds:DigestValue>([^<]*)</ds:DigestValue>`).FindAllStringSubmatch(string(doc), -1)
			if len(got.Refs) != len(want) || len(want) != tt.refs {
				t.Fatalf("%s: receipt has %d references, the request %d:\n%s", tt.file, len(got.Refs), len(want), rc)
			}
			for i, w := range want {
				if r := got.Refs[i]; r.URI != w[1] || r.Algo.Algorithm != w[2] || strings.TrimSpace(r.Digest) != strings.TrimSpace(w[3]) {
					t.Errorf("%s reference %d: got %+v, want URI %s method %s digest %s", tt.file, i, r, w[1], w[2], w[3])
				}
			}
		}
	}
}

// TestNonRepudiationInformationRefusesOthers: only ds:Reference elements
// become NRR entries.
func TestNonRepudiationInformationRefusesOthers(t *testing.T) {
	for _, in := range [][]byte{nil, []byte(`<x/>`), []byte(`<ds:Reference xmlns:ds="` + NamespaceDSig + `">`), []byte(`text`)} {
		var refs [][]byte
		if in != nil {
			refs = [][]byte{in}
		}
		if _, err := NonRepudiationInformation(refs); err == nil {
			t.Errorf("NonRepudiationInformation(%q) = nil error", in)
		}
	}
	// URI="" (the whole document) survives.
	out, err := NonRepudiationInformation([][]byte{[]byte(`<Reference xmlns="` + NamespaceDSig + `" URI=""><DigestValue>AA==</DigestValue></Reference>`)})
	must(t, err)
	if !strings.Contains(string(out), `<ds:Reference URI="">`) {
		t.Errorf("empty URI lost: %s", out)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
