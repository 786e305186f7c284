package wssec

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/txinbox/txinbox/as4/wssec/wssectest"
)

// FuzzVerify: any envelope is answered with a result or an *Error, never
// a panic, with or without decryption.
func FuzzVerify(f *testing.F) {
	p := wssectest.Get(f)
	env, err := mustSigner(f, p.LeafKey, p.Leaf).Sign([]byte(userMessage), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(env)
	x, _ := NewEncrypter(p.Receiver)
	encEnv, _, err := x.Encrypt(env, testAttachments())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(encEnv)
	files, _ := filepath.Glob("testdata/phase4/*.xml")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	d, _ := NewDecrypter(p.ReceiverKey, p.Receiver)
	v, _ := NewVerifier(VerifyConfig{Roots: p.Roots(), Decrypter: d})
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := v.Verify(data, testAttachments())
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("error %T %v is not an *Error", err, err)
		}
	})
}

// FuzzCanonicalize: the canonical form of a document is a document whose
// canonical form is itself, and streaming gives the same as the tree.
func FuzzCanonicalize(f *testing.F) {
	for _, c := range c14nCases {
		f.Add([]byte(c))
	}
	f.Add([]byte(userMessage))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := parse(data)
		if err != nil {
			return
		}
		once := canonicalizeDocument(doc)
		var streamed bytes.Buffer
		if err := canonicalizeStream(data, &streamed); err != nil || !bytes.Equal(streamed.Bytes(), once) {
			t.Fatalf("the streamed form differs (%v):\n%q\n%q", err, streamed.Bytes(), once)
		}
		again, err := parse(once)
		if err != nil {
			t.Fatalf("the canonical form does not parse: %v\n%q", err, once)
		}
		if twice := canonicalizeDocument(again); !bytes.Equal(once, twice) {
			t.Fatalf("not idempotent:\n%q\n%q", once, twice)
		}
	})
}

// FuzzReadJKS: any JKS body (given its right digest, so the fuzzer gets
// past the integrity check) is read or refused with an error, never a
// panic or a runaway allocation.
func FuzzReadJKS(f *testing.F) {
	b, err := os.ReadFile("testdata/domibus/gateway_keystore.jks")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b[:len(b)-sha1.Size])
	f.Add(b[:40])
	f.Fuzz(func(t *testing.T, body []byte) {
		h := sha1.New()
		h.Write(jksPassword("test123"))
		h.Write([]byte("Mighty Aphrodite"))
		h.Write(body)
		entries, err := readJKS(h.Sum(bytes.Clone(body)), "test123")
		if err == nil {
			for _, e := range entries {
				if e.key == nil || len(e.chain) == 0 || e.chain[0] == nil {
					t.Fatalf("entry %q read without its key or certificate", e.alias)
				}
			}
		}
	})
}
