package as4

import (
	"testing"
	"time"
)

var timeZero = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestValidTimestamp(t *testing.T) {
	for s, want := range map[string]bool{
		"2011-04-03T14:49:28.886Z":            true,
		"2006-07-25T12:19:05":                 true,
		"2023-03-09T10:23:26.8542515+01:00":   true,
		"2025-09-25T09:54:32.971659362+02:00": true,
		"2006-30-30T30:99:99":                 false,
		"2006-07-25T12:19:05.":                false,
		"2006-07-25T12:19:05+1":               false,
		"2006-07-25":                          false,
		"":                                    false,
	} {
		if got := validTimestamp(s); got != want {
			t.Errorf("validTimestamp(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestFingerprintIgnoresTransportNoise: the same message with other
// namespace prefixes, white space and MIME packaging has one fingerprint;
// another payload byte or header value changes it.
func TestFingerprintIgnoresTransportNoise(t *testing.T) {
	const a = `<S12:Envelope xmlns:S12="http://www.w3.org/2003/05/soap-envelope" xmlns:eb="http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"><S12:Header><eb:Messaging><eb:UserMessage><eb:MessageInfo><eb:Timestamp>2026-01-01T00:00:00Z</eb:Timestamp><eb:MessageId>m@x</eb:MessageId></eb:MessageInfo><eb:PartyInfo><eb:From><eb:PartyId>a</eb:PartyId><eb:Role>r</eb:Role></eb:From><eb:To><eb:PartyId>b</eb:PartyId><eb:Role>r</eb:Role></eb:To></eb:PartyInfo><eb:CollaborationInfo><eb:Service>s</eb:Service><eb:Action>ACT</eb:Action><eb:ConversationId>c</eb:ConversationId></eb:CollaborationInfo><eb:PayloadInfo><eb:PartInfo href="cid:p"/></eb:PayloadInfo></eb:UserMessage></eb:Messaging></S12:Header><S12:Body/></S12:Envelope>`
	b := `<env:Envelope xmlns:env="http://www.w3.org/2003/05/soap-envelope">
  <env:Header>
    <ns2:Messaging xmlns:ns2="http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"><ns2:UserMessage>
      <ns2:MessageInfo><ns2:Timestamp> 2026-01-01T00:00:00Z </ns2:Timestamp><ns2:MessageId>m@x</ns2:MessageId></ns2:MessageInfo>
      <ns2:PartyInfo><ns2:From><ns2:PartyId>a</ns2:PartyId><ns2:Role>r</ns2:Role></ns2:From><ns2:To><ns2:PartyId>b</ns2:PartyId><ns2:Role>r</ns2:Role></ns2:To></ns2:PartyInfo>
      <ns2:CollaborationInfo><ns2:Service>s</ns2:Service><ns2:Action>ACT</ns2:Action><ns2:ConversationId>c</ns2:ConversationId></ns2:CollaborationInfo>
      <ns2:PayloadInfo><ns2:PartInfo href="cid:p"></ns2:PartInfo></ns2:PayloadInfo>
    </ns2:UserMessage></ns2:Messaging>
  </env:Header>
  <env:Body></env:Body>
</env:Envelope>`
	mime := func(env, boundary, cte, data string) []byte {
		return []byte("--" + boundary + "\r\nContent-Type: application/soap+xml\r\n\r\n" + env + "\r\n--" + boundary +
			"\r\nContent-ID: <p>\r\nContent-Transfer-Encoding: " + cte + "\r\n\r\n" + data + "\r\n--" + boundary + "--\r\n")
	}
	fp := func(body []byte, boundary string) string {
		t.Helper()
		r, err := readRequest(body, "multipart/related; boundary="+boundary, defaultLimits, securityPolicy{})
		if err != nil {
			t.Fatal(err)
		}
		return string(fingerprint(&r.user, r.parts))
	}
	base := fp(mime(a, "X", "binary", "hello"), "X")
	if got := fp(mime(b, "other", "base64", "aGVsbG8="), "other"); got != base {
		t.Errorf("transport noise changed the fingerprint:\n%s\n%s", base, got)
	}
	if fp(mime(a, "X", "binary", "hellO"), "X") == base {
		t.Error("another payload has the same fingerprint")
	}
	if fp(mime(replace(a, "ACT", "ACT2"), "X", "binary", "hello"), "X") == base {
		t.Error("another Action has the same fingerprint")
	}
}

func replace(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}
