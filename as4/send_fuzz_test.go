package as4

import (
	"net/http"
	"testing"
	"time"

	"github.com/txinbox/txinbox/edi/ebms"
)

// FuzzSendResponse feeds the reader of a partner's answer arbitrary
// statuses, content types and bodies: it must never panic, and it may only
// report success for a 2xx answer whose receipt refers to the message.
func FuzzSendResponse(f *testing.F) {
	const id = "msg@fuzz"
	u := UserMessage{MessageID: id, Timestamp: "2026-01-01T00:00:00Z", Service: ebms.Service{Value: "s"}, Action: "a"}
	receipt := receiptEnvelope(soap12, "r@x", time.Time{}, &u, nil)
	failure := errorEnvelope(soap11, "e@x", time.Time{}, withRef(senderFailure(InvalidHeader, "bad"), id))
	f.Add(200, soap12.contentType, receipt)
	f.Add(400, soap11.contentType, failure)
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
