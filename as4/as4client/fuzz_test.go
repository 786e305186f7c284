package as4client

import (
	"net/http"
	"testing"

	"github.com/txinbox/txinbox/as4/internal/wire"
)

// The seeds are answers of txinbox's endpoint (package as4) to a message
// msg@fuzz: a receipt in SOAP 1.2 and an EBMS:0009 failure in SOAP 1.1.
const (
	fuzzReceipt = `<?xml version="1.0" encoding="UTF-8"?>
<S12:Envelope xmlns:S12="http://www.w3.org/2003/05/soap-envelope" xmlns:eb="http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"><S12:Header><eb:Messaging S12:mustUnderstand="true"><eb:SignalMessage><eb:MessageInfo><eb:Timestamp>0001-01-01T00:00:00.000Z</eb:Timestamp><eb:MessageId>r@x</eb:MessageId><eb:RefToMessageId>msg@fuzz</eb:RefToMessageId></eb:MessageInfo><eb:Receipt><wrap:OriginalUserMessage xmlns:wrap="urn:fdc:com.helger.phase4:ns:wrapper"><eb:UserMessage><eb:MessageInfo><eb:Timestamp>2026-01-01T00:00:00Z</eb:Timestamp><eb:MessageId>msg@fuzz</eb:MessageId></eb:MessageInfo><eb:PartyInfo><eb:From><eb:Role></eb:Role></eb:From><eb:To><eb:Role></eb:Role></eb:To></eb:PartyInfo><eb:CollaborationInfo><eb:Service>s</eb:Service><eb:Action>a</eb:Action><eb:ConversationId></eb:ConversationId></eb:CollaborationInfo></eb:UserMessage></wrap:OriginalUserMessage></eb:Receipt></eb:SignalMessage></eb:Messaging></S12:Header><S12:Body></S12:Body></S12:Envelope>`
	fuzzFailure = `<?xml version="1.0" encoding="UTF-8"?>
<S11:Envelope xmlns:S11="http://schemas.xmlsoap.org/soap/envelope/" xmlns:eb="http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"><S11:Header><eb:Messaging S11:mustUnderstand="1"><eb:SignalMessage><eb:MessageInfo><eb:Timestamp>0001-01-01T00:00:00.000Z</eb:Timestamp><eb:MessageId>e@x</eb:MessageId><eb:RefToMessageId>msg@fuzz</eb:RefToMessageId></eb:MessageInfo><eb:Error origin="ebMS" category="Unpackaging" errorCode="EBMS:0009" severity="failure" refToMessageInError="msg@fuzz" shortDescription="InvalidHeader"><eb:Description xml:lang="en">InvalidHeader</eb:Description><eb:ErrorDetail>bad</eb:ErrorDetail></eb:Error></eb:SignalMessage></eb:Messaging></S11:Header><S11:Body><S11:Fault><faultcode>S11:Client</faultcode><faultstring>EBMS:0009 InvalidHeader: bad</faultstring></S11:Fault></S11:Body></S11:Envelope>`
)

// FuzzSendResponse feeds the reader of a partner's answer arbitrary
// statuses, content types and bodies: it must never panic, and it may only
// report success for a 2xx answer whose receipt refers to the message.
func FuzzSendResponse(f *testing.F) {
	const id = "msg@fuzz"
	receipt := []byte(fuzzReceipt)
	f.Add(200, wire.ContentTypeSOAP12, receipt)
	f.Add(400, wire.ContentTypeSOAP11, []byte(fuzzFailure))
	f.Add(200, `multipart/related; boundary=B; start="<r>"`, append(append([]byte("--B\r\nContent-ID: <r>\r\n\r\n"), receipt...), "\r\n--B--\r\n"...))
	f.Add(503, "", []byte("<"))
	f.Add(200, "text/html", []byte("<html/>"))
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		status = 100 + (status%500+500)%500
		res, err := interpret(id, status, http.Header{"Content-Type": {contentType}}, body)
		if err != nil {
			if _, ok := err.(*SendError); !ok {
				t.Fatalf("error %T, want *SendError", err)
			}
			_ = err.Error()
			return
		}
		if status < 200 || status > 299 || len(res.Receipt) == 0 || res.MessageID != id {
			t.Fatalf("success for status %d, receipt %q", status, res.Receipt)
		}
	})
}
