package as4_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/edi/ebms"
)

// refusal is one input the endpoint must refuse.
type refusal struct {
	name   string
	ct     string
	body   func(t *testing.T) []byte
	status int
	code   as4.ErrorCode
}

func fixed(s string) func(t *testing.T) []byte { return func(*testing.T) []byte { return []byte(s) } }

func fromSample(name string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte { return sample(t, name) }
}

// generated returns a generated message's envelope after edit.
func generated(edit func(string) string) func(t *testing.T) []byte {
	return func(*testing.T) []byte {
		return []byte(edit(userMessage{id: "gen@test", from: "sender"}.envelope()))
	}
}

const soapFault = `<S12:Envelope xmlns:S12="http://www.w3.org/2003/05/soap-envelope"><S12:Body><S12:Fault>
<S12:Code><S12:Value>S12:Receiver</S12:Value></S12:Code><S12:Reason><S12:Text xml:lang="en">boom</S12:Text></S12:Reason>
</S12:Fault></S12:Body></S12:Envelope>`

func TestMalformedInput(t *testing.T) {
	t.Parallel()
	const soap = "application/soap+xml"
	const bad = http.StatusBadRequest
	cases := []refusal{
		{"garbage", soap, fixed("hello, world"), bad, as4.InvalidHeader},
		{"empty", soap, fixed(""), bad, as4.InvalidHeader},
		{"not XML", "text/plain", fixed("<a/>"), bad, as4.InvalidHeader},
		{"SOAP fault", soap, fixed(soapFault), bad, as4.InvalidHeader},
		{"NoMessaging.xml", "text/xml", fromSample("NoMessaging.xml"), bad, as4.InvalidHeader},
		{"EmptyMessaging.xml", "text/xml", fromSample("EmptyMessaging.xml"), bad, as4.InvalidHeader},
		{"MessageInfoMissing.xml", "text/xml", fromSample("MessageInfoMissing.xml"), bad, as4.InvalidHeader},
		{"MessageInfoIDMissing.xml", "text/xml", fromSample("MessageInfoIDMissing.xml"), bad, as4.InvalidHeader},
		{"MessageInfoImaginaryTimestamp.xml", "text/xml", fromSample("MessageInfoImaginaryTimestamp.xml"), bad, as4.InvalidHeader},
		{"TwoUserMessages.xml", soap, fromSample("TwoUserMessages.xml"), bad, as4.InvalidHeader},
		{"BundledMessage.xml", "text/xml", fromSample("BundledMessage.xml"), bad, as4.InvalidHeader},
		{"UserMessage-no-soap.xml", "text/xml", fromSample("UserMessage-no-soap.xml"), bad, as4.InvalidHeader},
		{"UserMessageNoPartyID.xml", soap, fromSample("UserMessageNoPartyID.xml"), bad, as4.InvalidHeader},
		{"UserMessageWithCompressedPayload12.xml (malformed XML)", soap, fromSample("UserMessageWithCompressedPayload12.xml"), bad, as4.InvalidHeader},
		{"TestMimeMessage12.xml (cid: without the part)", soap, fromSample("TestMimeMessage12.xml"), bad, as4.ExternalPayloadError},
		{"MessageId too long", soap, generated(func(s string) string {
			return strings.Replace(s, "gen@test", strings.Repeat("x", 256)+"@test", 1)
		}), bad, as4.InvalidHeader},
		{"Latin-1 envelope", soap, generated(func(s string) string {
			return strings.Replace(s, `encoding="UTF-8"`, `encoding="ISO-8859-1"`, 1)
		}), bad, as4.ValueNotRecognized},
		{"external payload", soap, generated(func(s string) string {
			return strings.Replace(s, "</eb:CollaborationInfo>", `</eb:CollaborationInfo><eb:PayloadInfo><eb:PartInfo href="https://example.com/x"/></eb:PayloadInfo>`, 1)
		}), bad, as4.ExternalPayloadError},
		{"body payload without body", soap, generated(func(s string) string {
			return strings.Replace(s, "</eb:CollaborationInfo>", `</eb:CollaborationInfo><eb:PayloadInfo><eb:PartInfo/></eb:PayloadInfo>`, 1)
		}), bad, as4.ExternalPayloadError},
		{"unreferenced body", soap, generated(func(s string) string {
			return strings.Replace(s, "<S12:Body/>", `<S12:Body><x/></S12:Body>`, 1)
		}), bad, as4.ValueInconsistent},
	}
	cases = append(cases, mimeRefusals()...)
	e := newSQLite(t, options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, post(t, e.url, c.ct, c.body(t)), c.status, c.code)
		})
	}
	if n := e.count(t, "SELECT count(*) FROM txinbox_inbox"); n != 0 {
		t.Errorf("%d inbox rows after refusals, want 0", n)
	}
}

func mimeRefusals() []refusal {
	const bad = http.StatusBadRequest
	twoParts := userMessage{id: "two@test", from: "sender", payloads: [][]byte{[]byte("<a/>"), []byte("<b/>")}}
	body, ct := twoParts.mime(false)
	boundary := ct[strings.Index(ct, `boundary="`)+10:]
	boundary = boundary[:strings.Index(boundary, `"`)]
	return []refusal{
		{"multipart without boundary", "multipart/related", fixed("--x\r\n\r\n<a/>\r\n--x--"), bad, as4.MimeInconsistency},
		{"multipart with another boundary", strings.Replace(ct, boundary, "nope", 1), fixed(string(body)), bad, as4.MimeInconsistency},
		{"truncated multipart", ct, fixed(string(body[:len(body)-30])), bad, as4.MimeInconsistency},
		{"unreferenced attachment", ct, fixed(strings.Replace(string(body), `<eb:PartInfo href="cid:part1@test"><eb:PartProperties><eb:Property name="MimeType">application/xml</eb:Property></eb:PartProperties></eb:PartInfo>`, "", 1)), bad, as4.ValueInconsistent},
		{"two PartInfos for one part", ct, fixed(strings.Replace(string(body), `cid:part1@test`, `cid:part0@test`, 1)), bad, as4.ValueInconsistent},
	}
}

// splitCapture splits a saved MIME message into its Content-Type and body.
func splitCapture(t *testing.T, b []byte) (string, []byte) {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(b))
	h, err := textproto.NewReader(r).ReadMIMEHeader()
	must(t, err)
	rest := new(bytes.Buffer)
	_, err = rest.ReadFrom(r)
	must(t, err)
	return h.Get("Content-Type"), rest.Bytes()
}

func TestWrongCompressionSample(t *testing.T) {
	t.Parallel()
	ct, body := splitCapture(t, sample(t, "WrongCompression.mime"))
	e := newSQLite(t, options{})
	wantError(t, post(t, e.url, ct, body), http.StatusBadRequest, as4.DecompressionFailure)
}

// TestSignedSignalsNeedVerification: signals whose wsse:Security header
// must be understood are refused like user messages unless the endpoint
// accepts unverified security.
func TestSignedSignalsNeedVerification(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{})
	for name, code := range map[string]as4.ErrorCode{"TestReceipt11.xml": as4.PolicyNoncompliance, "TestReceipt12.xml": as4.PolicyNoncompliance,
		// Its second wsse:Security has a line break in the namespace: a
		// header block of an unknown namespace that must be understood.
		"PullRequest12.xml": as4.InvalidHeader} {
		r := post(t, e.url, "application/soap+xml", sample(t, name))
		wantError(t, r, http.StatusInternalServerError, code)
		if sig := signalOf(t, r); !strings.Contains(string(r.body), `refToMessageInError="`) || sig.RefToMessageID == "" {
			t.Errorf("%s: the error does not name the signal:\n%s", name, r.body)
		}
	}
}

func TestSignalMessages(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{acceptUnverified: true})
	for _, name := range []string{"ReceiptMessage.xml", "TestReceipt11.xml", "TestReceipt12.xml", "testfiles__ErrorMessage.xml",
		"soap11test__ErrorMessage.xml", "ErrorMessageWithFault.xml"} {
		t.Run(name, func(t *testing.T) {
			r := post(t, e.url, "application/soap+xml", sample(t, name))
			if r.status != http.StatusOK || len(r.body) != 0 {
				t.Errorf("status %d with %d bytes, want 200 and no body:\n%s", r.status, len(r.body), r.body)
			}
		})
	}
	t.Run("PullRequest", func(t *testing.T) {
		r := post(t, e.url, "application/soap+xml", []byte(`<S12:Envelope xmlns:S12="http://www.w3.org/2003/05/soap-envelope" xmlns:eb="`+ebms.NamespaceEbMS+`"><S12:Header><eb:Messaging S12:mustUnderstand="true"><eb:SignalMessage>`+
			`<eb:MessageInfo><eb:Timestamp>2026-11-30T10:00:00Z</eb:Timestamp><eb:MessageId>pull-1@test</eb:MessageId></eb:MessageInfo><eb:PullRequest mpc="urn:test:mpc"/></eb:SignalMessage></eb:Messaging></S12:Header><S12:Body/></S12:Envelope>`))
		wantError(t, r, http.StatusOK, as4.EmptyMessagePartitionChannel)
		if !strings.Contains(string(r.body), `severity="warning"`) || strings.Contains(string(r.body), "Fault") {
			t.Errorf("not a warning without fault:\n%s", r.body)
		}
	})
	if n := e.count(t, "SELECT count(*) FROM txinbox_inbox"); n != 0 {
		t.Errorf("%d inbox rows after signals, want 0", n)
	}
}

// withAttachment wraps a sample envelope into multipart/related with one
// attachment.
func withAttachment(envelope []byte, rootType, cid string, data []byte) ([]byte, string) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "--B\r\nContent-Type: %s\r\n\r\n", rootType)
	b.Write(envelope)
	fmt.Fprintf(&b, "\r\n--B\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\nContent-ID: <%s>\r\n\r\n", cid)
	b.WriteString(base64Lines(data))
	b.WriteString("\r\n--B--\r\n")
	return b.Bytes(), `multipart/related; boundary=B; type="` + rootType + `"`
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func TestAcceptedSamples(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{acceptUnverified: true})
	t.Run("UserMessage.xml (SOAP 1.1 with an attachment)", func(t *testing.T) {
		body, ct := withAttachment(sample(t, "UserMessage.xml"), "text/xml", "part@example.com", []byte("<po/>"))
		r := post(t, e.url, ct, body)
		wantReceipt(t, r, "UUID-1@requester.example.com")
		if !strings.HasPrefix(r.contentType, "text/xml") || !strings.Contains(string(r.body), "http://schemas.xmlsoap.org/soap/envelope/") {
			t.Errorf("a SOAP 1.1 message got a %s answer:\n%s", r.contentType, r.body)
		}
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_payloads WHERE data = $1", []byte("<po/>")); n != 1 {
			t.Error("the base64 attachment is not stored decoded")
		}
	})
	t.Run("test-2023-03-15.xml (gzip payload, MessageId without @)", func(t *testing.T) {
		body, ct := withAttachment(sample(t, "test-2023-03-15.xml"), "application/soap+xml", "sbdhID", gzipped("<sbd/>"))
		wantReceipt(t, post(t, e.url, ct, body), "49267c79-d822-45d9-aa91-c57b3ca508db")
	})
	t.Run("UserMessage12.xml (payload in the SOAP Body)", func(t *testing.T) {
		wantReceipt(t, post(t, e.url, "application/soap+xml", sample(t, "UserMessage12.xml")), "2011-921@5209999001264.example.com")
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_payloads WHERE href LIKE '#%' AND CAST(data AS TEXT) LIKE '<CrossIndustryInvoice%'"); n != 1 {
			t.Error("the SOAP Body payload is not stored")
		}
	})
}

func TestMisspelledMustUnderstandRefusedByDefault(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{})
	wantError(t, post(t, e.url, "application/soap+xml", sample(t, "UserMessage12.xml")), http.StatusInternalServerError, as4.PolicyNoncompliance)
}
