package wssec

import (
	"bytes"
	"fmt"
)

const nsEBBP = "http://docs.oasis-open.org/ebxml-bp/ebbp-signals-2.0"

// readReference returns a ds:Reference's URI, digest and canonical form.
func readReference(ref *node) (Reference, *Error) {
	r := Reference{URI: ref.attr("", "URI"), XML: canonicalize(ref, nil)}
	dm, _ := ref.child(nsDS, "DigestMethod")
	dv, _ := ref.child(nsDS, "DigestValue")
	if dm == nil || dv == nil {
		return r, authFailed("ds:Reference URI=%q lacks ds:DigestMethod or ds:DigestValue", r.URI)
	}
	r.DigestMethod = dm.attr("", "Algorithm")
	var err error
	if r.DigestValue, err = decodeBase64(dv.textContent()); err != nil {
		return r, authFailed("ds:Reference URI=%q: DigestValue: %v", r.URI, err)
	}
	return r, nil
}

// SignedReferences returns the ds:Reference elements of the signature in
// an envelope's security header, as Signer.Sign wrote them: what the
// partner's non-repudiation receipt must repeat. Nothing is verified.
func SignedReferences(envelope []byte) ([]Reference, error) {
	doc, err := parse(envelope)
	if err != nil {
		return nil, fmt.Errorf("wssec: %w", err)
	}
	env, e := readSOAP(doc)
	switch {
	case e != nil:
		return nil, e
	case env.security == nil || len(env.security.signatures) != 1:
		return nil, fmt.Errorf("wssec: the envelope has no signature")
	}
	sig, e := readSignature(env.security.signatures[0])
	if e != nil {
		return nil, e
	}
	var out []Reference
	for _, ref := range sig.refs {
		r, e := readReference(ref)
		if e != nil {
			return nil, e
		}
		out = append(out, r)
	}
	return out, nil
}

// VerifyReceipt verifies a partner's signed receipt for a message whose
// signature had the references sent: the receipt's signature must verify
// with a trusted certificate and cover its eb:Messaging header, and that
// header's eb:Receipt must hold a ebbp:NonRepudiationInformation that
// repeats every sent reference with the same digest. The error is an
// *Error.
func (v *Verifier) VerifyReceipt(receipt []byte, sent []Reference) (*Result, error) {
	res, err := v.Verify(receipt, nil)
	if err != nil {
		return nil, err
	}
	if !res.Signed {
		return nil, policyFailed("the receipt is not signed")
	}
	doc, err := parse(res.Envelope)
	if err != nil {
		return nil, authFailed("the receipt: %v", err)
	}
	env, e := readSOAP(doc)
	if e != nil {
		return nil, e
	}
	got, e := nrrReferences(env.messaging)
	if e != nil {
		return nil, e
	}
	for _, s := range sent {
		found := false
		for _, g := range got {
			if g.URI == s.URI && g.DigestMethod == s.DigestMethod && bytes.Equal(g.DigestValue, s.DigestValue) {
				found = true
				break
			}
		}
		if !found {
			return nil, authFailed("the receipt's non-repudiation information has no reference URI=%q with the digest that was sent", s.URI)
		}
	}
	return res, nil
}

// nrrReferences reads the references of the NonRepudiationInformation in
// eb:Messaging/eb:SignalMessage/eb:Receipt: inside the signed header.
func nrrReferences(messaging *node) ([]Reference, *Error) {
	if messaging == nil {
		return nil, authFailed("the receipt has no eb:Messaging header")
	}
	var out []Reference
	for _, sm := range messaging.elementsNamed(nsEbMS, "SignalMessage") {
		for _, rc := range sm.elementsNamed(nsEbMS, "Receipt") {
			for _, nri := range rc.elementsNamed(nsEBBP, "NonRepudiationInformation") {
				for _, part := range nri.elementsNamed(nsEBBP, "MessagePartNRInformation") {
					for _, ref := range part.elementsNamed(nsDS, "Reference") {
						r, e := readReference(ref)
						if e != nil {
							return nil, e
						}
						out = append(out, r)
					}
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, policyFailed("the receipt holds no ebbp:NonRepudiationInformation references")
	}
	return out, nil
}
