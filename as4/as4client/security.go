package as4client

import (
	"errors"

	"github.com/txinbox/txinbox/as4/wssec"
)

// Security is the WS-Security of a Client's messages to one partner.
type Security struct {
	// Signer signs every message: the eb:Messaging header, the Body and
	// each payload. Defaults to nil: unsigned.
	Signer *wssec.Signer
	// Encrypter encrypts the payloads for the partner's certificate,
	// after signing. Defaults to nil: payloads in clear.
	Encrypter *wssec.Encrypter
	// ReceiptVerifier verifies the partner's receipt of a signed message:
	// its signature, against the verifier's trust store, and its
	// non-repudiation information, which must repeat the digests that
	// were signed. A receipt that fails is a retryable *SendError (the
	// message may have arrived; a resend gets the receipt again).
	// Defaults to nil: receipts are not verified.
	ReceiptVerifier *wssec.Verifier
}

func (s *Security) validate() error {
	if s.ReceiptVerifier != nil && s.Signer == nil {
		return configError("Security.ReceiptVerifier", "requires Security.Signer: a non-repudiation receipt answers a signed message")
	}
	return nil
}

// encode returns the message as multipart/related, signed and encrypted
// as configured, with the references of its signature.
func (c *Client) encode(m *Outgoing) ([]byte, string, []wssec.Reference, error) {
	sec := c.cfg.Security
	if sec.Signer == nil && sec.Encrypter == nil {
		body, ct, err := m.encode()
		return body, ct, nil, err
	}
	env := m.envelope()
	atts := make([]wssec.Attachment, len(m.Payloads))
	for i, p := range m.Payloads {
		atts[i] = wssec.Attachment{ContentID: p.ContentID, ContentType: p.ContentType, Data: p.Data}
	}
	var refs []wssec.Reference
	var err error
	if sec.Signer != nil {
		if env, err = sec.Signer.Sign(env, atts); err != nil {
			return nil, "", nil, &SendError{MessageID: m.MessageID, Reason: "signing the message failed", Err: err}
		}
		if refs, err = wssec.SignedReferences(env); err != nil {
			return nil, "", nil, &SendError{MessageID: m.MessageID, Reason: "reading the message's signature failed", Err: err}
		}
	}
	if sec.Encrypter != nil {
		if env, atts, err = sec.Encrypter.Encrypt(env, atts); err != nil {
			return nil, "", nil, &SendError{MessageID: m.MessageID, Reason: "encrypting the message failed", Err: err}
		}
	}
	payloads := make([]Payload, len(atts))
	for i, a := range atts {
		payloads[i] = Payload{ContentID: a.ContentID, ContentType: a.ContentType, Data: a.Data}
	}
	body, ct, err := encodeMIME(env, payloads)
	return body, ct, refs, err
}

// checkReceipt verifies the receipt of a signed message when a
// ReceiptVerifier is configured.
func (c *Client) checkReceipt(res *SendResult, signed []wssec.Reference) (*SendResult, error) {
	v := c.cfg.Security.ReceiptVerifier
	if v == nil || signed == nil {
		return res, nil
	}
	if res.Duplicate {
		// A duplicate notice carries no non-repudiation information (that
		// went with the receipt of the first transmission): it must be
		// signed by the partner, and then speaks for it.
		if r, err := v.Verify(res.Receipt, nil); err != nil || !r.Signed {
			if err == nil {
				err = errors.New("the answer is not signed")
			}
			return nil, &SendError{MessageID: res.MessageID, StatusCode: res.StatusCode,
				Reason: "the partner's duplicate notice does not prove delivery", Err: err}
		}
		return res, nil
	}
	if _, err := v.VerifyReceipt(res.Receipt, signed); err != nil {
		return nil, &SendError{MessageID: res.MessageID, StatusCode: res.StatusCode,
			Reason: "the partner's receipt does not prove delivery of what was signed", Err: err}
	}
	return res, nil
}
