package ebms

import (
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const (
	s12 = `xmlns:S12="http://www.w3.org/2003/05/soap-envelope"`
	s11 = `xmlns:S11="http://schemas.xmlsoap.org/soap/envelope/"`
	eb  = `xmlns:eb="http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"`
)

const userMessage = `<eb:UserMessage mpc="urn:mpc">
  <eb:MessageInfo><eb:Timestamp>2024-01-01T00:00:00Z</eb:Timestamp><eb:MessageId> id-1@sender </eb:MessageId><eb:RefToMessageId>r@x</eb:RefToMessageId></eb:MessageInfo>
  <eb:PartyInfo>
    <eb:From><eb:PartyId type="urn:t">
      P1</eb:PartyId><eb:PartyId>P1b</eb:PartyId><eb:Role>init</eb:Role></eb:From>
    <eb:To><eb:PartyId>P2</eb:PartyId><eb:Role>resp</eb:Role></eb:To>
  </eb:PartyInfo>
  <eb:CollaborationInfo><eb:AgreementRef>agr</eb:AgreementRef><eb:Service type="st">svc
  </eb:Service><eb:Action>act</eb:Action><eb:ConversationId>conv</eb:ConversationId></eb:CollaborationInfo>
</eb:UserMessage>`

// env12 wraps header blocks and a body in a SOAP 1.2 envelope.
func env12(header, body string) string {
	return `<?xml version="1.0" encoding="UTF-8"?><S12:Envelope ` + s12 + ` ` + eb + `><S12:Header>` + header +
		`</S12:Header><S12:Body>` + body + `</S12:Body></S12:Envelope>`
}

func messaging(units ...string) string {
	return `<eb:Messaging S12:mustUnderstand="true">` + strings.Join(units, "") + `</eb:Messaging>`
}

func mimeMessage(boundary string, parts ...string) string {
	var b strings.Builder
	b.WriteString("preamble\r\n")
	for _, p := range parts {
		b.WriteString("--" + boundary + "\r\n" + p + "\r\n")
	}
	b.WriteString("--" + boundary + "--\r\n")
	return b.String()
}

func TestParseUserMessage(t *testing.T) {
	t.Parallel()
	bare := env12(`<wsse:Security xmlns:wsse="urn:wsse"><x>`+strings.Repeat("z", 3000)+`</x></wsse:Security>`+messaging(userMessage), "<payload/>")
	root := "Content-Type: application/soap+xml; charset=UTF-8\r\nContent-ID: <root@x>\r\n\r\n" + bare
	att := "Content-Type: application/octet-stream\r\nContent-ID: <att@x>\r\n\r\n--b not a boundary\r\n\x00\xff"
	tests := []struct {
		name, in, ct, soap string
	}{
		{"SOAP 1.2 bare", bare, "application/soap+xml; charset=utf-8", "1.2"},
		{"SOAP 1.2 sniffed", "\r\n" + bare, "", "1.2"},
		{"SOAP 1.1", `<S11:Envelope ` + s11 + ` ` + eb + `><S11:Header>` + messaging(userMessage) + `</S11:Header><S11:Body/></S11:Envelope>`, "text/xml", "1.1"},
		{"byte order mark", "\xef\xbb\xbf" + bare, "", "1.2"},
		{"MIME, root first", mimeMessage("b", root, att), `multipart/related; boundary=b; type="application/soap+xml"`, "1.2"},
		{"MIME, root named by start after an attachment", mimeMessage("b", att, root), `multipart/related; boundary=b; start="<root@x>"`, "1.2"},
		{"MIME headers in the input", "MIME-Version: 1.0\r\nContent-Type: multipart/related;\r\n\tboundary=\"b\"\r\n\r\n" + mimeMessage("b", root, att), "", "1.2"},
		{"multipart body without headers", "--b\r\n" + strings.SplitN(mimeMessage("b", root, att), "--b\r\n", 2)[1], "", "1.2"},
		{"HTTP request capture", "POST /as4 HTTP/1.1\r\nHost: x\r\nContent-Type: application/soap+xml\r\n\r\n" + bare, "", "1.2"},
		{"base64 root part", mimeMessage("b", "Content-Type: application/soap+xml\r\nContent-Transfer-Encoding: base64\r\n\r\n"+
			wrap(base64.StdEncoding.EncodeToString([]byte(bare)))), "multipart/related; boundary=b", "1.2"},
		{"quoted-printable root part", mimeMessage("b", "Content-Type: application/soap+xml\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"+
			strings.ReplaceAll(bare, "=", "=3D")), "multipart/related; boundary=b", "1.2"},
		{"LF-only MIME", strings.ReplaceAll(mimeMessage("b", root, att), "\r\n", "\n"), "multipart/related; boundary=b", "1.2"},
		{"ISO-8859-1", strings.Replace(bare, "UTF-8", "ISO-8859-1", 1), "", "1.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Parse(strings.NewReader(tt.in), tt.ct)
			if err != nil {
				t.Fatal(err)
			}
			want := Message{SOAPVersion: tt.soap, MessageID: "id-1@sender", RefToMessageID: "r@x", Timestamp: "2024-01-01T00:00:00Z",
				AgreementRef: "agr", Service: Service{Type: "st", Value: "svc"}, Action: "act", ConversationID: "conv", MPC: "urn:mpc"}
			got := *m
			got.Offset, got.From, got.To = 0, Party{}, Party{}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			if s := m.Sender(); s != (PartyID{Type: "urn:t", ID: "P1"}) || len(m.From.IDs) != 2 || m.From.Role != "init" || m.To.IDs[0].ID != "P2" {
				t.Errorf("parties: from %+v to %+v", m.From, m.To)
			}
			if !strings.HasPrefix(tt.in[m.Offset:], "<eb:UserMessage") && !strings.Contains(tt.name, "base64") && !strings.Contains(tt.name, "quoted") {
				t.Errorf("Offset %d does not point at eb:UserMessage: %.30q", m.Offset, tt.in[m.Offset:])
			}
		})
	}
}

func wrap(s string) string {
	var b strings.Builder
	for len(s) > 76 {
		b.WriteString(s[:76] + "\r\n")
		s = s[76:]
	}
	return b.String() + s
}

func TestSignals(t *testing.T) {
	t.Parallel()
	info := `<eb:MessageInfo><eb:Timestamp>t</eb:Timestamp><eb:MessageId>sig@x</eb:MessageId><eb:RefToMessageId>id-1@sender</eb:RefToMessageId></eb:MessageInfo>`
	tests := []struct {
		name, unit, kind string
		codes            []string
	}{
		{"receipt with a copy of the user message", `<eb:SignalMessage>` + info + `<eb:Receipt>` + env12(messaging(userMessage), "") + `</eb:Receipt></eb:SignalMessage>`, "Receipt", nil},
		{"error", `<eb:SignalMessage>` + info + `<eb:Error errorCode="EBMS:0004" severity="failure"/><eb:Error errorCode="EBMS:0301" severity="failure"/></eb:SignalMessage>`, "Error", []string{"EBMS:0004", "EBMS:0301"}},
		{"pull request", `<eb:SignalMessage>` + info + `<eb:PullRequest mpc="m"/></eb:SignalMessage>`, "PullRequest", nil},
		{"unknown signal", `<eb:SignalMessage>` + info + `</eb:SignalMessage>`, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := env12(messaging(tt.unit), "")
			m, err := Parse(strings.NewReader(in), "")
			var se *SignalError
			if m != nil || !errors.As(err, &se) || !errors.Is(err, ErrSignalMessage) {
				t.Fatalf("Parse = %v, %v; want a *SignalError", m, err)
			}
			if se.Signal != tt.kind || se.MessageID != "sig@x" || se.RefToMessageID != "id-1@sender" || strings.Join(se.ErrorCodes, ",") != strings.Join(tt.codes, ",") {
				t.Errorf("got %+v", se)
			}
			if se.Path != "/S12:Envelope/S12:Header/eb:Messaging/eb:SignalMessage" || !strings.HasPrefix(in[se.Offset:], "<eb:SignalMessage>") {
				t.Errorf("path %q offset %d", se.Path, se.Offset)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	f12 := `<S12:Fault><S12:Code><S12:Value>S12:Receiver</S12:Value></S12:Code><S12:Reason><S12:Text xml:lang="en">boom</S12:Text></S12:Reason></S12:Fault>`
	f11 := `<S11:Fault><faultcode>S11:Server</faultcode><faultstring>bang</faultstring></S11:Fault>`
	tests := []struct{ name, in, code, reason string }{
		{"SOAP 1.2, empty header", env12("", f12), "S12:Receiver", "boom"},
		{"SOAP 1.2, no header", `<S12:Envelope ` + s12 + `><S12:Body>` + f12 + `</S12:Body></S12:Envelope>`, "S12:Receiver", "boom"},
		{"SOAP 1.1", `<S11:Envelope ` + s11 + `><S11:Body>` + f11 + `</S11:Body></S11:Envelope>`, "S11:Server", "bang"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(strings.NewReader(tt.in), "")
			var fe *FaultError
			if !errors.As(err, &fe) || !errors.Is(err, ErrSOAPFault) {
				t.Fatalf("err = %v, want a *FaultError", err)
			}
			if fe.Code != tt.code || fe.Reason != tt.reason || !strings.HasSuffix(fe.Path, ":Body/"+fe.Code[:3]+":Fault") {
				t.Errorf("got %+v", fe)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	um := func(old, new string) string { return env12(messaging(strings.Replace(userMessage, old, new, 1)), "") }
	hdr := "/S12:Envelope/S12:Header/eb:Messaging"
	tests := []struct {
		name, in, ct string
		sentinel     error
		path, msg    string
	}{
		{"empty", " \n", "", ErrNotSOAP, "", "the input is empty"},
		{"no XML element", "<!-- only a comment -->", "text/xml", ErrNotSOAP, "/", "no XML element in the input"},
		{"root is not an envelope", `<a:Envelope xmlns:a="urn:x"/>`, "", ErrNotSOAP, "/Envelope", "root element is {urn:x}Envelope, not a SOAP 1.1 or 1.2 Envelope"},
		{"bare eb:Messaging", strings.Replace(messaging(userMessage), "<eb:Messaging", "<eb:Messaging "+eb, 1), "", ErrNotSOAP, "/eb:Messaging", "eb:Messaging is the root element"},
		{"no eb:Messaging", env12(`<x:Other xmlns:x="urn:x"/>`, "<p/>"), "", ErrNoMessaging, "/S12:Envelope/S12:Header", "the SOAP Header has no eb:Messaging block"},
		{"eb:Messaging in another namespace", env12(`<eb:Messaging xmlns:eb="urn:old-ebms">`+`</eb:Messaging>`, ""), "", ErrNoMessaging, "/S12:Envelope/S12:Header", "no eb:Messaging block"},
		{"no header, plain body", `<S12:Envelope ` + s12 + `><S12:Body><p/></S12:Body></S12:Envelope>`, "", ErrNoMessaging, "/S12:Envelope/S12:Body", "no SOAP Header"},
		{"no header, empty body", `<S12:Envelope ` + s12 + `><S12:Body/></S12:Envelope>`, "", ErrNoMessaging, "/S12:Envelope/S12:Body", "no SOAP Header"},
		{"header then no body", `<S12:Envelope ` + s12 + `><S12:Header/></S12:Envelope>`, "", ErrNoMessaging, "/S12:Envelope/S12:Header", "no eb:Messaging block"},
		{"unexpected envelope child", `<S12:Envelope ` + s12 + `><x/></S12:Envelope>`, "", ErrNotSOAP, "/S12:Envelope/x", "expected the SOAP Header or Body, found x"},
		{"empty envelope", `<S12:Envelope ` + s12 + `/>`, "", ErrNoMessaging, "/S12:Envelope", "the envelope is empty"},
		{"empty eb:Messaging", env12(messaging(), ""), "", ErrInvalidHeader, hdr, "eb:Messaging has no eb:UserMessage (and no eb:SignalMessage)"},
		{"no MessageInfo", um("<eb:MessageInfo>", "<eb:Other>"), "", ErrMalformed, hdr + "/eb:UserMessage", "malformed XML"},
		{"MessageInfo missing", env12(messaging(`<eb:UserMessage><eb:PartyInfo/></eb:UserMessage>`), ""), "", ErrInvalidHeader, hdr + "/eb:UserMessage/eb:MessageInfo", "missing"},
		{"MessageId missing", um("<eb:MessageId> id-1@sender </eb:MessageId>", ""), "", ErrInvalidHeader, hdr + "/eb:UserMessage/eb:MessageInfo/eb:MessageId", "missing"},
		{"MessageId empty", um("<eb:MessageId> id-1@sender </eb:MessageId>", "<eb:MessageId>\n\t</eb:MessageId>"), "", ErrInvalidHeader, hdr + "/eb:UserMessage/eb:MessageInfo/eb:MessageId", "empty"},
		{"MessageId twice", um("<eb:MessageId>", "<eb:MessageId>a</eb:MessageId><eb:MessageId>"), "", ErrInvalidHeader, hdr + "/eb:UserMessage/eb:MessageInfo/eb:MessageId", "appears 2 times, once expected"},
		{"From missing", replacer(um("<eb:From>", "<eb:Sender>")).replaceEnd("</eb:From>", "</eb:Sender>"), "", ErrInvalidHeader, hdr + "/eb:UserMessage/eb:PartyInfo/eb:From", "missing"},
		{"From PartyId empty", um(`<eb:PartyId type="urn:t">
      P1</eb:PartyId>`, `<eb:PartyId type="urn:t"> </eb:PartyId>`), "", ErrInvalidHeader, hdr + "/eb:UserMessage/eb:PartyInfo/eb:From/eb:PartyId", "empty"},
		{"two user messages", env12(messaging(userMessage, userMessage), ""), "", ErrInvalidHeader, hdr, "eb:Messaging bundles 2 message units (eb:UserMessage, eb:UserMessage); AS4 allows exactly one"},
		{"user message and signal", env12(messaging(`<eb:SignalMessage/>`, userMessage), ""), "", ErrInvalidHeader, hdr, "bundles 2 message units"},
		{"two eb:Messaging blocks", env12(messaging(userMessage)+messaging(userMessage), ""), "", ErrInvalidHeader, hdr, "second eb:Messaging header block"},
		{"malformed", env12(messaging(userMessage), "")[:300] + "</S12:Envelope>", "", ErrMalformed, hdr + "/eb:UserMessage", "malformed XML: element <Timestamp> closed by </Envelope>"},
		{"truncated", env12(messaging(userMessage), "")[:300], "", ErrMalformed, hdr + "/eb:UserMessage", "input ends inside the XML"},
		{"DOCTYPE", `<!DOCTYPE S12:Envelope [<!ENTITY x "y">]>` + env12(messaging(userMessage), ""), "", ErrMalformed, "/", "a document type declaration (<!DOCTYPE …>) is not allowed in a SOAP message"},
		{"unsupported encoding", strings.Replace(env12(messaging(userMessage), ""), "UTF-8", "EBCDIC", 1), "", ErrMalformed, "/", `unsupported XML encoding "EBCDIC"`},
		{"unsupported content type", env12(messaging(userMessage), ""), "application/json", ErrNotSOAP, "Content-Type", `"application/json" is neither multipart/related nor a SOAP envelope type`},
		{"bad content type", "x", "multipart/related; boundary", ErrMIME, "Content-Type", "cannot parse"},
		{"no boundary", "x", "multipart/related", ErrMIME, "Content-Type", "multipart content type without a boundary parameter"},
		{"boundary not found", "no parts here", "multipart/related; boundary=b", ErrMIME, "multipart/related", `the boundary "b" does not occur in the body (input ends)`},
		{"no part at all", "--b--\r\n", "multipart/related; boundary=b", ErrMIME, "multipart/related", "the multipart body has no part"},
		{"start part missing", mimeMessage("b", "Content-ID: <a>\r\n\r\nx"), `multipart/related; boundary=b; start="<root>"`, ErrMIME, "multipart/related", "no MIME part has the Content-ID <root> named by the start parameter"},
		{"root part not XML", mimeMessage("b", "Content-Type: application/pdf\r\n\r\n%PDF"), "multipart/related; boundary=b", ErrNotSOAP, "MIME part 1", `root part has Content-Type "application/pdf", not a SOAP envelope`},
		{"root part encoding", mimeMessage("b", "Content-Transfer-Encoding: x-uue\r\n\r\n<a/>"), "multipart/related; boundary=b", ErrMIME, "MIME part 1", `unsupported Content-Transfer-Encoding "x-uue"`},
		{"part headers broken", "--b\r\nno colon here\r\n\r\n", "multipart/related; boundary=b", ErrMIME, "MIME part 1", `not a MIME header line: "no colon here"`},
		{"part headers truncated", "--b\r\nContent-Type: text/xml\r\n", "multipart/related; boundary=b", ErrMIME, "MIME part 1", "input ends inside the MIME headers"},
		{"headers without content type", "MIME-Version: 1.0\r\n\r\n<a/>", "", ErrNotSOAP, "MIME headers", "no Content-Type header"},
		{"chunked capture", "HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n<a/>", "", ErrMIME, "MIME headers", "Transfer-Encoding chunked is not supported"},
		{"not headers", "hello world\r\n\r\n", "", ErrMIME, "MIME headers", `not a MIME header line: "hello world"`},
		{"header too large", env12(`<x:Big xmlns:x="urn:x">`+strings.Repeat("a", 9<<20)+`</x:Big>`, ""), "", ErrMalformed, "/S12:Envelope/S12:Header", "envelope header larger than 8 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Parse(strings.NewReader(tt.in), tt.ct)
			var e *Error
			if m != nil || !errors.As(err, &e) || !errors.Is(err, tt.sentinel) {
				t.Fatalf("Parse = %v, %v; want an *Error wrapping %v", m, err, tt.sentinel)
			}
			if !strings.HasPrefix(e.Path, tt.path) || !strings.Contains(e.Msg, tt.msg) || e.Offset < 0 || e.Offset > int64(len(tt.in)) {
				t.Errorf("got path %q offset %d msg %q\nwant path %q msg containing %q", e.Path, e.Offset, e.Msg, tt.path, tt.msg)
			}
		})
	}
}

type replacer string

func (s replacer) replaceEnd(old, new string) string { return strings.Replace(string(s), old, new, 1) }

func TestErrorMessages(t *testing.T) {
	t.Parallel()
	in := env12(messaging(strings.Replace(userMessage, "<eb:MessageId> id-1@sender </eb:MessageId>", "", 1)), "")
	_, err := Parse(strings.NewReader(in), "")
	off := strings.Index(in, "<eb:UserMessage")
	want := "ebms: /S12:Envelope/S12:Header/eb:Messaging/eb:UserMessage/eb:MessageInfo/eb:MessageId at byte " + itoa(int64(off)) + ": missing"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
	se := &SignalError{Signal: "Error", MessageID: "s", RefToMessageID: "u", ErrorCodes: []string{"EBMS:0004"}, Path: "/p", Offset: 3}
	if got := se.Error(); got != `ebms: /p at byte 3: Error signal message "s" referring to "u" (EBMS:0004): signals are not inbox items` {
		t.Errorf("signal: %s", got)
	}
	fe := &FaultError{Code: "c", Reason: "r", Path: "/f", Offset: 1}
	if got := fe.Error(); got != `ebms: /f at byte 1: SOAP fault c: "r" (no eb:Messaging)` {
		t.Errorf("fault: %s", got)
	}
	if got := (&Error{Offset: 2, Msg: "m"}).Error(); got != "ebms: at byte 2: m" {
		t.Errorf("no path: %s", got)
	}
}
