package webhooksig_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/webhooksig"
)

// opensslHMAC computes the hex HMAC-SHA256 of data with key by openssl,
// an implementation independent of Go's. Without openssl the test is
// skipped, with CI=true it fails.
func opensslHMAC(t *testing.T, key string, data []byte) string {
	t.Helper()
	bin, err := exec.LookPath("openssl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("openssl is required in CI")
		}
		t.Skip("no openssl")
	}
	cmd := exec.Command(bin, "dgst", "-sha256", "-hmac", key)
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("openssl: %v", err)
	}
	_, sum, ok := strings.Cut(strings.TrimSpace(string(out)), "= ")
	if !ok || len(sum) != 64 {
		t.Fatalf("openssl printed %q", out)
	}
	return sum
}

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func wantReason(t *testing.T, what string, err, reason error) {
	t.Helper()
	var e *webhooksig.Error
	if !errors.Is(err, reason) || !errors.As(err, &e) {
		t.Errorf("%s: %v, want %v", what, err, reason)
	}
}

// TestGitHubDocumentedVector: the example of GitHub's documentation
// ("Validating webhook deliveries"): secret "It's a Secret to Everybody",
// payload "Hello, World!".
func TestGitHubDocumentedVector(t *testing.T) {
	g := webhooksig.GitHub{Secret: []byte("It's a Secret to Everybody")}
	sig := "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if err := g.Verify(header(webhooksig.GitHubHeader, sig), []byte("Hello, World!")); err != nil {
		t.Fatal(err)
	}
	wantReason(t, "changed body", g.Verify(header(webhooksig.GitHubHeader, sig), []byte("Hello, World?")), webhooksig.ErrMismatch)
	wantReason(t, "no header", g.Verify(header(), []byte("Hello, World!")), webhooksig.ErrMissing)
	wantReason(t, "sha1 header", g.Verify(header(webhooksig.GitHubHeader, "sha1="+sig[7:47]), []byte("Hello, World!")), webhooksig.ErrMalformed)
	wantReason(t, "upper-case prefix", g.Verify(header(webhooksig.GitHubHeader, "SHA256="+sig[7:]), []byte("Hello, World!")), webhooksig.ErrMalformed)
}

// TestAgainstOpenSSL: GitHub's, the generic (hex and base64, with a
// prefix) and Stripe's signatures, computed by openssl over random
// bodies, pass; each changed in one byte fails.
func TestAgainstOpenSSL(t *testing.T) {
	for i := range 5 {
		body := make([]byte, 1+i*997)
		rand.Read(body)
		secret := fmt.Sprintf("whsec_%x", body[:1])
		mac := opensslHMAC(t, secret, body)
		raw, _ := hex.DecodeString(mac)
		verifiers := []struct {
			v webhooksig.Verifier
			h http.Header
		}{
			{webhooksig.GitHub{Secret: []byte(secret)}, header(webhooksig.GitHubHeader, "sha256="+mac)},
			{webhooksig.HMAC{Secret: []byte(secret), Header: "X-Signature"}, header("X-Signature", mac)},
			{webhooksig.HMAC{Secret: []byte(secret), Header: "X-Shopify-Hmac-Sha256", Encoding: webhooksig.Base64}, header("X-Shopify-Hmac-Sha256", base64.StdEncoding.EncodeToString(raw))},
			{webhooksig.HMAC{Secret: []byte(secret), Header: "X-Sig", Encoding: webhooksig.Base64, Prefix: "sha256="}, header("X-Sig", "sha256="+base64.RawStdEncoding.EncodeToString(raw))},
		}
		ts := time.Now().Unix()
		stripeMAC := opensslHMAC(t, secret, append([]byte(fmt.Sprintf("%d.", ts)), body...))
		verifiers = append(verifiers, struct {
			v webhooksig.Verifier
			h http.Header
		}{webhooksig.Stripe{Secrets: [][]byte{[]byte(secret)}}, header(webhooksig.StripeHeader, fmt.Sprintf("t=%d,v1=%s,v0=%s", ts, stripeMAC, strings.Repeat("0", 64)))})
		for k, c := range verifiers {
			if err := c.v.Verify(c.h, body); err != nil {
				t.Errorf("body %d verifier %d: %v", i, k, err)
			}
			changed := bytes.Clone(body)
			changed[len(changed)/2] ^= 1
			wantReason(t, fmt.Sprintf("body %d verifier %d, changed", i, k), c.v.Verify(c.h, changed), webhooksig.ErrMismatch)
		}
	}
}

// TestStripe: the tolerance (a replay after 300 s refused, with a valid
// signature; a timestamp far in the future too), several v1 values (one
// valid suffices), rolled secrets, and malformed headers.
func TestStripe(t *testing.T) {
	secret := []byte("whsec_test_secret")
	body := []byte(`{"id":"evt_1","object":"event"}`)
	now := time.Unix(1_700_000_000, 0)
	signed := func(ts int64, key []byte) string {
		return hex.EncodeToString(webhooksig.Sign(key, []byte(fmt.Sprint(ts)+"."), body))
	}
	s := webhooksig.Stripe{Secrets: [][]byte{[]byte("whsec_old"), secret}, Now: func() time.Time { return now }}
	ok := func(ts int64) http.Header {
		return header(webhooksig.StripeHeader, fmt.Sprintf("t=%d,v1=%s", ts, signed(ts, secret)))
	}
	if err := s.Verify(ok(now.Unix()-299), body); err != nil {
		t.Fatalf("299 s old: %v", err)
	}
	wantReason(t, "301 s old (a replay)", s.Verify(ok(now.Unix()-301), body), webhooksig.ErrExpired)
	wantReason(t, "301 s ahead", s.Verify(ok(now.Unix()+301), body), webhooksig.ErrExpired)
	wide := s
	wide.Tolerance = time.Hour
	if err := wide.Verify(ok(now.Unix()-3000), body); err != nil {
		t.Fatalf("within a tolerance of 1h: %v", err)
	}
	ts := now.Unix()
	two := header(webhooksig.StripeHeader, fmt.Sprintf("t=%d,v1=%s,v1=%s", ts, signed(ts, []byte("whsec_other")), signed(ts, secret)))
	if err := s.Verify(two, body); err != nil {
		t.Fatalf("two v1, the second valid: %v", err)
	}
	// The timestamp is signed: moving it breaks the signature.
	moved := header(webhooksig.StripeHeader, fmt.Sprintf("t=%d,v1=%s", ts+1, signed(ts, secret)))
	wantReason(t, "moved timestamp", s.Verify(moved, body), webhooksig.ErrMismatch)
	wantReason(t, "signed by another secret", s.Verify(header(webhooksig.StripeHeader, fmt.Sprintf("t=%d,v1=%s", ts, signed(ts, []byte("whsec_x")))), body), webhooksig.ErrMismatch)
	for _, v := range []string{"v1=" + signed(ts, secret), fmt.Sprintf("t=%d", ts), fmt.Sprintf("t=%d,v0=%s", ts, signed(ts, secret)),
		fmt.Sprintf("t=x,v1=%s", signed(ts, secret)), fmt.Sprintf("t=%d,t=%d,v1=%s", ts, ts, signed(ts, secret)), fmt.Sprintf("t=%d,v1=zz", ts), "garbage"} {
		wantReason(t, v, s.Verify(header(webhooksig.StripeHeader, v), body), webhooksig.ErrMalformed)
	}
	wantReason(t, "no header", s.Verify(header(), body), webhooksig.ErrMissing)
}

// TestErrorHidesSecrets: no refusal's text holds the secret or the
// signature that was expected.
func TestErrorHidesSecrets(t *testing.T) {
	secret := []byte("s3cret-value")
	body := []byte("x")
	want := hex.EncodeToString(webhooksig.Sign(secret, body))
	for _, v := range []webhooksig.Verifier{webhooksig.GitHub{Secret: secret}, webhooksig.HMAC{Secret: secret, Header: webhooksig.GitHubHeader, Prefix: "sha256="}} {
		err := v.Verify(header(webhooksig.GitHubHeader, "sha256="+strings.Repeat("ab", 32)), body)
		if err == nil || strings.Contains(err.Error(), string(secret)) || strings.Contains(err.Error(), want) {
			t.Errorf("%T: %v", v, err)
		}
	}
}
