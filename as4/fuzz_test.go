package as4

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/edi/ebms"
)

// FuzzReadRequest feeds the request reader arbitrary bodies and content
// types: it must never panic, and every answer it builds must parse.
func FuzzReadRequest(f *testing.F) {
	names, _ := filepath.Glob(filepath.Join("..", "..", "shared", "edi", "samples", "phase4", "*"))
	for _, n := range names {
		if b, err := os.ReadFile(n); err == nil {
			f.Add(b, "application/soap+xml")
		}
	}
	f.Add([]byte("--B\r\nContent-Type: application/soap+xml\r\n\r\n<a/>\r\n--B\r\nContent-ID: <x>\r\n\r\nx\r\n--B--\r\n"), "multipart/related; boundary=B")
	f.Add([]byte("<S12:Envelope xmlns:S12=\"http://www.w3.org/2003/05/soap-envelope\"><S12:Body/></S12:Envelope>"), "")
	doc, _ := os.ReadFile(filepath.Join("testdata", "phase4", "TestMimeMessage12.xml"))
	f.Add(doc, "application/soap+xml")
	f.Add([]byte(strings.Replace(string(doc), "S12:mustUnderstand=\"false\"", "", 1)), "")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		r, err := readRequest(body, contentType, limits{depth: 32, elements: 2000, decompressed: 1 << 20}, securityPolicy{})
		if err == nil {
			fp := fingerprint(&r.user, r.parts)
			rc := receiptEnvelope(soapOf(r.msg.SOAPVersion), "id@x", timeZero, &r.user, nil)
			mustParseSignal(t, rc, soapOf(r.msg.SOAPVersion).contentType)
			if len(r.signatureRefs) > 0 {
				// The references read from the request make a valid NRR
				// receipt, and it can be rewritten in the other version.
				nrr, err := NonRepudiationInformation(r.signatureRefs)
				if err != nil {
					t.Fatalf("references read from the request: %v", err)
				}
				rc = receiptEnvelope(soapOf(r.msg.SOAPVersion), "id@x", timeZero, &r.user, nrr)
				mustParseSignal(t, rc, soapOf(r.msg.SOAPVersion).contentType)
				if id, _, _, content, ok := storedReceiptParts(rc); !ok || id != "id@x" || !bytes.Equal(content, nrr) {
					t.Fatalf("the receipt cannot be rewritten: %v %q", ok, id)
				}
			}
			if len(fp) == 0 || len(r.parts) != len(r.user.PartInfos) {
				t.Fatalf("fingerprint %d bytes, %d parts for %d PartInfos", len(fp), len(r.parts), len(r.user.PartInfos))
			}
			return
		}
		if f, ok := err.(*failure); ok {
			mustParseSignal(t, errorEnvelope(soap12, "id@x", timeZero, f), soap12.contentType)
		}
	})
}

func mustParseSignal(t *testing.T, b []byte, ct string) {
	t.Helper()
	if _, err := ebms.Parse(bytes.NewReader(b), ct); err == nil || !isSignal(err) {
		t.Fatalf("the endpoint's own answer does not parse as a signal: %v\n%s", err, b)
	}
}

func isSignal(err error) bool {
	_, ok := err.(*ebms.SignalError)
	return ok
}
