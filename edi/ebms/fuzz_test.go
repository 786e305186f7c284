package ebms

import (
	"bytes"
	"errors"
	"testing"
	"testing/iotest"

	"github.com/txinbox/txinbox/edi/internal/testsamples"
)

func FuzzEbms(f *testing.F) {
	for _, s := range testsamples.Seeds("phase4/") {
		f.Add(s, "")
	}
	bare := env12(messaging(userMessage), "")
	f.Add([]byte(bare), "application/soap+xml")
	f.Add([]byte(mimeMessage("b", "Content-Type: application/soap+xml\r\nContent-ID: <r>\r\n\r\n"+bare, "Content-ID: <a>\r\n\r\nzz")), `multipart/related; boundary=b; start="<r>"`)
	f.Add([]byte("POST / HTTP/1.1\r\nContent-Type: multipart/related; boundary=q\r\n\r\n--q\r\n\r\n"+bare+"\r\n--q--"), "")
	f.Add([]byte(env12(messaging(`<eb:SignalMessage><eb:MessageInfo><eb:MessageId>s</eb:MessageId></eb:MessageInfo><eb:Receipt/></eb:SignalMessage>`), "")), "")
	f.Fuzz(func(t *testing.T, data []byte, contentType string) {
		m, err := Parse(bytes.NewReader(data), contentType)
		checkResult(t, m, err)
		m2, err2 := Parse(iotest.OneByteReader(bytes.NewReader(data)), contentType)
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) || (m != nil && m.Sender() != m2.Sender()) {
			t.Fatalf("one-byte reads differ: %v / %v", err, err2)
		}
	})
}

func checkResult(t *testing.T, m *Message, err error) {
	t.Helper()
	if err == nil {
		if m == nil || m.MessageID == "" || m.Sender().ID == "" || m.Offset < 0 || (m.SOAPVersion != "1.1" && m.SOAPVersion != "1.2") {
			t.Fatalf("bad message %+v", m)
		}
		return
	}
	if m != nil {
		t.Fatalf("message %+v with error %v", m, err)
	}
	var (
		e  *Error
		se *SignalError
		fe *FaultError
	)
	switch {
	case errors.As(err, &e):
		if e.Offset < 0 || e.Msg == "" || e.Err == nil {
			t.Fatalf("bad error %+v", e)
		}
	case errors.As(err, &se):
		if !errors.Is(err, ErrSignalMessage) || se.Offset < 0 {
			t.Fatalf("bad signal error %+v", se)
		}
	case errors.As(err, &fe):
		if !errors.Is(err, ErrSOAPFault) || fe.Offset < 0 {
			t.Fatalf("bad fault error %+v", fe)
		}
	default:
		t.Fatalf("untyped error %v (%T)", err, err)
	}
}
