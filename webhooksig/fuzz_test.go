package webhooksig_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/webhooksig"
)

// FuzzParseStripe: any header value is read or refused with an *Error,
// never a panic; one read has a timestamp and 1 to 16 signatures of 32
// bytes.
func FuzzParseStripe(f *testing.F) {
	sig := strings.Repeat("ab", 32)
	for _, s := range []string{"t=1,v1=" + sig, "t=1700000000,v1=" + sig + ",v0=" + sig + ",v1=" + sig, " t=1 , v1=" + sig, "t=,v1=", ",,,", "t=1=2,v1=" + sig} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ts, sigs, err := webhooksig.ParseStripe(v)
		var e *webhooksig.Error
		switch {
		case err != nil && !errors.As(err, &e):
			t.Fatalf("%q: %T %v", v, err, err)
		case err == nil && (ts <= 0 || len(sigs) == 0 || len(sigs) > 16):
			t.Fatalf("%q: t=%d, %d signatures", v, ts, len(sigs))
		}
		for _, s := range sigs {
			if len(s) != 32 {
				t.Fatalf("%q: a signature of %d bytes", v, len(s))
			}
		}
	})
}

// FuzzParseHeaders: GitHub's and the generic header's parsers read a
// 32-byte signature or refuse with an *Error; what GitHub's reads is the
// hex in the value.
func FuzzParseHeaders(f *testing.F) {
	sig := strings.Repeat("0f", 32)
	for _, s := range []string{"sha256=" + sig, "sha256=", "sha1=" + sig[:40], sig, "sha256=" + sig + "00", "D/8="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		mac, err := webhooksig.ParseGitHub(v)
		var e *webhooksig.Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("%q: %T", v, err)
		}
		if err == nil && (len(mac) != 32 || !strings.EqualFold(fmt.Sprintf("sha256=%s", hex.EncodeToString(mac)), v)) {
			t.Fatalf("%q read as %x", v, mac)
		}
		for _, enc := range []webhooksig.Encoding{webhooksig.Hex, webhooksig.Base64} {
			mac, err := webhooksig.HMAC{Header: "X", Encoding: enc, Prefix: "sha256="}.Parse(v)
			if err != nil && !errors.As(err, &e) || err == nil && len(mac) != 32 {
				t.Fatalf("%s %q: %v, %d bytes", enc, v, err, len(mac))
			}
		}
	})
}
