package as4

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"strings"

	"github.com/txinbox/txinbox/as4/internal/wire"
	"github.com/txinbox/txinbox/as4/wssec"
	"github.com/txinbox/txinbox/edi/ebms"
)

// The WS-Security hook points of the endpoint: verifySecurity runs on the
// request body before the ebMS header is read; signReceipt turns the
// receipt of a signed request into a signed non-repudiation receipt.

// SecurityConfig configures WS-Security (OASIS WSS 1.1.1 as profiled by
// eDelivery AS4) on the endpoint.
type SecurityConfig struct {
	// Verifier decrypts (when its VerifyConfig.Decrypter is set) and
	// checks the signature of incoming messages against its trust store.
	// Decrypted messages are read, stored and delivered as plaintext.
	// Defaults to nil: signatures are not verified, and a
	// wsse:Security header marked mustUnderstand is refused unless
	// AcceptUnverifiedSecurity is set.
	Verifier *wssec.Verifier
	// RequireSignature refuses user messages that carry no signature
	// (EBMS:0103). Defaults to false. Requires Verifier. Without it a
	// message whose signature was stripped on the way passes as
	// unsigned: set it whenever every partner signs (serve --as4-trust
	// does, unless --as4-allow-unsigned).
	RequireSignature bool
	// Signer signs the receipt of every signed request, which is then a
	// non-repudiation receipt: eb:Receipt holds the request signature's
	// ds:Reference elements. Defaults to nil: receipts are unsigned and
	// hold a copy of the eb:UserMessage.
	Signer *wssec.Signer
}

func (c *SecurityConfig) validate() error {
	if c.RequireSignature && c.Verifier == nil {
		return configError("Security.RequireSignature", "requires Security.Verifier")
	}
	return nil
}

// The ebMS security errors (ebMS 3.0 §6.7.2).
const (
	// FailedAuthentication: the signature does not verify, a signed part
	// was changed, or the signer is not trusted.
	FailedAuthentication ErrorCode = wssec.FailedAuthentication
	// FailedDecryption: an encrypted part cannot be decrypted.
	FailedDecryption ErrorCode = wssec.FailedDecryption
)

func init() {
	errorInfo[FailedAuthentication] = [2]string{"FailedAuthentication", "Processing"}
	errorInfo[FailedDecryption] = [2]string{"FailedDecryption", "Processing"}
}

// verifySecurity decrypts and verifies a request when a Verifier is
// configured, and returns the message to read: the body as received, or
// for an encrypted message its plaintext packed again as
// multipart/related. A body whose MIME structure cannot be read is left
// to readRequest, which answers it.
func (h *Handler[TTx]) verifySecurity(body []byte, contentType string) (*verified, []byte, string, *failure) {
	v := h.cfg.Security.Verifier
	none := &verified{Result: &wssec.Result{}}
	if v == nil {
		return none, body, contentType, nil
	}
	ct := contentType
	if ct == "" {
		ct = "application/soap+xml"
	}
	root, parts, f := splitMIME(body, ct)
	if f != nil {
		return none, body, contentType, nil
	}
	// The limits hold before the verifier builds its tree.
	if f := prescan(root, h.limits()); f != nil {
		return nil, nil, "", withRef(f, peekMessageID(root))
	}
	atts := make([]wssec.Attachment, len(parts))
	for i, p := range parts {
		atts[i] = wssec.Attachment{ContentID: p.ContentID, ContentType: p.ContentType, Data: p.Data}
	}
	res, err := v.Verify(root, atts)
	if err != nil {
		var e *wssec.Error
		if !errors.As(err, &e) {
			e = &wssec.Error{Code: wssec.FailedAuthentication, Detail: err.Error()}
		}
		if e.Code == wssec.InvalidHeader {
			// readRequest names what is wrong, or refuses the
			// wsse:Security header it could not verify.
			return &verified{Result: &wssec.Result{}, unread: e.Detail}, body, contentType, nil
		}
		f = senderFailure(ErrorCode(e.Code), e.Detail)
		if msg, err := ebms.Parse(bytes.NewReader(body), ct); err == nil {
			f.RefToMessageID = msg.MessageID
		}
		return nil, nil, "", f
	}
	out := &verified{Result: res, plaintextParts: plaintextParts(parts, res)}
	if !res.Encrypted {
		return out, body, contentType, nil
	}
	plain, plainType := repack(res.Envelope, res.Attachments, ct)
	return out, plain, plainType, nil
}

// repack packs a decrypted envelope and attachments as multipart/related,
// with the root part's type of the original Content-Type.
func repack(env []byte, atts []wssec.Attachment, contentType string) ([]byte, string) {
	_, params, _ := mime.ParseMediaType(contentType)
	rootType := params["type"]
	if rootType == "" {
		rootType = "application/soap+xml"
	}
	// The types come from the sender's EncryptedData: no line breaks may
	// pass into the headers.
	oneLine := strings.NewReplacer("\r", " ", "\n", " ", "\"", "")
	rootType = oneLine.Replace(rootType)
	boundary := "txinbox-plain-" + strings.TrimSuffix(newMessageID(), "@txinbox")
	var b bytes.Buffer
	fmt.Fprintf(&b, "--%s\r\nContent-Type: %s; charset=UTF-8\r\nContent-ID: <root@txinbox>\r\n\r\n", boundary, rootType)
	b.Write(env)
	for _, a := range atts {
		fmt.Fprintf(&b, "\r\n--%s\r\nContent-Type: %s\r\nContent-Transfer-Encoding: binary\r\nContent-ID: <%s>\r\n\r\n", boundary, oneLine.Replace(a.ContentType), oneLine.Replace(a.ContentID))
		b.Write(a.Data)
	}
	fmt.Fprintf(&b, "\r\n--%s--\r\n", boundary)
	return b.Bytes(), fmt.Sprintf(`multipart/related; boundary="%s"; type="%s"; start="<root@txinbox>"`, boundary, rootType)
}

// verified is what verifySecurity found.
type verified struct {
	*wssec.Result
	// plaintextParts are the Content-IDs of the attachments that were
	// not encrypted.
	plaintextParts []string
	// unread is why the verifier could not read the envelope; "" if it
	// did.
	unread string
}

// verifiedRefs returns the ds:Reference elements of a verified
// signature, nil for an unsigned message.
func verifiedRefs(sec *verified) [][]byte {
	if sec == nil || sec.Result == nil || !sec.Signed {
		return nil
	}
	refs := make([][]byte, len(sec.References))
	for i, r := range sec.References {
		refs[i] = r.XML
	}
	return refs
}

// plaintextParts returns the Content-IDs of the attachments that came
// unencrypted: those whose bytes after decryption are the bytes on the
// wire (AES-GCM ciphertext is always longer than its plaintext).
func plaintextParts(received []*wire.Part, sec *wssec.Result) []string {
	var ids []string
	for i, p := range received {
		if !sec.Encrypted || i >= len(sec.Attachments) || bytes.Equal(sec.Attachments[i].Data, p.Data) {
			ids = append(ids, p.ContentID)
		}
	}
	return ids
}
