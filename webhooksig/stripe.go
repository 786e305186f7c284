package webhooksig

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// StripeHeader is the header Stripe signs events in.
const StripeHeader = "Stripe-Signature"

// DefaultStripeTolerance is Stripe's SDKs' default tolerance: 300 s.
const DefaultStripeTolerance = 300 * time.Second

// Stripe verifies Stripe's Stripe-Signature: "t=" a Unix timestamp and
// one or more "v1=" hex HMAC-SHA256 of the timestamp, a dot and the body
// (several while a secret is rolled); other schemes (v0) are ignored. A
// timestamp further than Tolerance from now, in the past (a replay) or
// the future, is refused even with a valid signature.
type Stripe struct {
	// Secrets are the endpoint's signing secrets ("whsec_..."), as
	// given; a signature by any of them passes (while one is rolled).
	// Required.
	Secrets [][]byte
	// Tolerance is how far the signed timestamp may be from Now.
	// Defaults to DefaultStripeTolerance.
	Tolerance time.Duration
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// Verify checks h's Stripe-Signature against body.
func (s Stripe) Verify(h http.Header, body []byte) error {
	ts, sigs, err := ParseStripe(h.Get(StripeHeader))
	if err != nil {
		return err
	}
	tolerance, now := s.Tolerance, time.Now
	if tolerance == 0 {
		tolerance = DefaultStripeTolerance
	}
	if s.Now != nil {
		now = s.Now
	}
	// The signature is checked first: a refusal for the time only tells
	// who holds a valid signature.
	prefix := []byte(strconv.FormatInt(ts, 10) + ".")
	matched := false
	for _, secret := range s.Secrets {
		want := Sign(secret, prefix, body)
		for _, sig := range sigs {
			matched = hmac.Equal(sig, want) || matched
		}
	}
	if !matched {
		return &Error{Scheme: "stripe", Reason: ErrMismatch}
	}
	age := now().Sub(time.Unix(ts, 0))
	if age > tolerance || age < -tolerance {
		return &Error{Scheme: "stripe", Reason: ErrExpired, Detail: fmt.Sprintf("signed %s from now, tolerance %s", age.Round(time.Second), tolerance)}
	}
	return nil
}

// maxStripeSignatures bounds the v1 values read from one header.
const maxStripeSignatures = 16

// ParseStripe reads a Stripe-Signature value: comma-separated key=value
// pairs, one t (a Unix timestamp) and at least one v1 (64 hex digits).
// Unknown keys (v0, future schemes) are skipped.
func ParseStripe(v string) (int64, [][]byte, error) {
	bad := func(detail string) (int64, [][]byte, error) {
		return 0, nil, &Error{Scheme: "stripe", Reason: ErrMalformed, Detail: detail}
	}
	if strings.TrimSpace(v) == "" {
		return 0, nil, &Error{Scheme: "stripe", Reason: ErrMissing, Detail: StripeHeader}
	}
	var ts int64
	haveTS := false
	var sigs [][]byte
	for item := range strings.SplitSeq(v, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return bad(fmt.Sprintf("%.40q is not key=value", item))
		}
		switch key {
		case "t":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || haveTS || n <= 0 {
				return bad("t must be one positive Unix timestamp")
			}
			ts, haveTS = n, true
		case "v1":
			mac, err := hex.DecodeString(val)
			if err != nil || len(mac) != sha256.Size {
				return bad("a v1 signature is not 64 hex digits")
			}
			if len(sigs) == maxStripeSignatures {
				return bad(fmt.Sprintf("more than %d v1 signatures", maxStripeSignatures))
			}
			sigs = append(sigs, mac)
		}
	}
	switch {
	case !haveTS:
		return bad("no t= timestamp")
	case len(sigs) == 0:
		return bad("no v1= signature")
	}
	return ts, sigs, nil
}
