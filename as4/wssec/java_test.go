package wssec

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/as4/wssec/wssectest"
)

// c14nCases are documents whose exclusive canonical form Go and
// Santuario must agree on.
var c14nCases = []string{
	"<?xml version=\"1.0\"?>\r\n<Invoice xmlns=\"urn:inv\"   b='2' a=\"1\"><ID>42</ID><!-- c --><Note>a &amp; b</Note></Invoice>\n",
	`<a:r xmlns:a="urn:a" xmlns:b="urn:b" xmlns:unused="urn:u" b:z="1" a:y="2" x="3"><b:c xmlns:b="urn:b"/><d xmlns="urn:d"><e xmlns=""/></d></a:r>`,
	"<?pi before?><r attr=\"tab&#9;nl&#10;cr&#13;q&quot;lt&lt;gt>amp&amp;\">text&#13;&gt;&lt;&amp;\"'<![CDATA[<cdata>&]]></r><?pi after?><!-- end -->",
	`<r xmlns="urn:x"><s:e xmlns:s="urn:s" xmlns="urn:x"><f/></s:e><g xmlns="urn:y"><h xmlns="urn:x"/></g></r>`,
	"<r xml:lang=\"en\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"><v xsi:type=\"t\">\u00e9\u4e2d\U0001F600</v></r>",
}

func TestJavaPeerInterop(t *testing.T) {
	jp := wssectest.JavaPeer(t)
	p := wssectest.Get(t)
	dir := t.TempDir()
	key, cert := wssectest.WriteFiles(t, dir, "signer", p.LeafKey, p.Leaf)
	_, ca := wssectest.WriteFiles(t, dir, "ca", nil, p.CA)

	goSigned, err := mustSigner(t, p.LeafKey, p.Leaf).Sign([]byte(userMessage), nil)
	if err != nil {
		t.Fatal(err)
	}
	wssectest.Write(t, filepath.Join(dir, "go-signed.xml"), goSigned)
	wssectest.Write(t, filepath.Join(dir, "go-tampered.xml"), bytes.Replace(goSigned, []byte("invoice-42"), []byte("invoice-43"), 1))
	wssectest.Write(t, filepath.Join(dir, "unsigned.xml"), []byte(userMessage))
	cmds := [][]string{
		{"sign", key, cert, filepath.Join(dir, "unsigned.xml"), filepath.Join(dir, "java-signed.xml")},
		{"verify", ca, filepath.Join(dir, "go-signed.xml")},
		{"verify", ca, filepath.Join(dir, "go-tampered.xml")},
	}
	for i, c := range c14nCases {
		in := filepath.Join(dir, fmt.Sprintf("c14n-%d.xml", i))
		wssectest.Write(t, in, []byte(c))
		cmds = append(cmds, []string{"c14n", in, in + ".out"})
	}
	res := jp.Run(t, cmds)

	if res[0] != "ok signed" {
		t.Fatalf("WSS4J signing: %s", res[0])
	}
	javaSigned, err := os.ReadFile(filepath.Join(dir, "java-signed.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifierFor(t, p).Verify(javaSigned, nil); err != nil {
		t.Fatalf("WSS4J's signature refused: %v\n%s", err, javaSigned)
	}
	_, err = verifierFor(t, p).Verify(bytes.Replace(javaSigned, []byte("invoice-42"), []byte("invoice-43"), 1), nil)
	wantCode(t, err, FailedAuthentication, "digest does not match")

	want := "ok Body(" + algRSASHA256 + "," + algSHA256 + ") Messaging(" + algRSASHA256 + "," + algSHA256 + ")"
	if res[1] != want {
		t.Fatalf("WSS4J verifying Go's signature: %s", res[1])
	}
	if !strings.HasPrefix(res[2], "error ") {
		t.Fatalf("WSS4J accepted a tampered envelope: %s", res[2])
	}
	for i, c := range c14nCases {
		if res[3+i] != "ok" {
			t.Fatalf("c14n %d: %s", i, res[3+i])
		}
		javaOut, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("c14n-%d.xml.out", i)))
		doc, err := parse([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		if got := canonicalizeDocument(doc); !bytes.Equal(got, javaOut) {
			t.Errorf("c14n %d:\n go: %q\njava: %q", i, got, javaOut)
		}
		var streamed bytes.Buffer
		if err := canonicalizeStream([]byte(c), &streamed); err != nil || !bytes.Equal(streamed.Bytes(), javaOut) {
			t.Errorf("streamed c14n %d: %v\n go: %q\njava: %q", i, err, streamed.Bytes(), javaOut)
		}
	}
}

// TestJavaPeerSignEncrypt: Santuario signs the header, the Body and two
// attachments (SwA transform) and then encrypts the attachments with
// AES-128-GCM, the key wrapped with RSA-OAEP in both variants; Go
// decrypts, then verifies.
func TestJavaPeerSignEncrypt(t *testing.T) {
	jp := wssectest.JavaPeer(t)
	p := wssectest.Get(t)
	dir := t.TempDir()
	key, cert := wssectest.WriteFiles(t, dir, "signer", p.LeafKey, p.Leaf)
	_, rcpt := wssectest.WriteFiles(t, dir, "receiver", nil, p.Receiver)
	in := filepath.Join(dir, "unsigned.xml")
	wssectest.Write(t, in, []byte(userMessage))
	plain := []Attachment{
		{ContentID: "invoice", ContentType: "application/gzip", Data: []byte("\x1f\x8b\x08\x00compressed invoice")},
		{ContentID: "scan", ContentType: "image/png", Data: bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 0, 0xff}, 1000)},
	}
	args := func(variant string) []string {
		c := []string{"swa", key, cert, rcpt, in, filepath.Join(dir, variant+".xml"), variant}
		for _, a := range plain {
			f := filepath.Join(dir, variant+"-"+a.ContentID)
			wssectest.Write(t, f, a.Data)
			c = append(c, f, a.ContentID, a.ContentType)
		}
		return c
	}
	variants := []string{"mgf1p", "sha256"}
	res := jp.Run(t, [][]string{args(variants[0]), args(variants[1])})
	for i, variant := range variants {
		t.Run(variant, func(t *testing.T) {
			if res[i] != "ok signed+encrypted" {
				t.Fatalf("Santuario: %s", res[i])
			}
			env, err := os.ReadFile(filepath.Join(dir, variant+".xml"))
			if err != nil {
				t.Fatal(err)
			}
			var enc []Attachment
			for _, a := range plain {
				data, err := os.ReadFile(filepath.Join(dir, variant+"-"+a.ContentID+".enc"))
				if err != nil {
					t.Fatal(err)
				}
				enc = append(enc, Attachment{ContentID: a.ContentID, ContentType: "application/octet-stream", Data: data})
			}
			got, err := receiverVerifier(t, p).Verify(env, enc)
			if err != nil {
				t.Fatalf("%v\n%s", err, env)
			}
			if !got.Signed || !got.Encrypted || len(got.References) != 4 {
				t.Fatalf("%+v", got)
			}
			for k := range plain {
				if !bytes.Equal(got.Attachments[k].Data, plain[k].Data) || got.Attachments[k].ContentType != plain[k].ContentType {
					t.Fatalf("attachment %d: %q %q", k, got.Attachments[k].ContentType, got.Attachments[k].Data[:10])
				}
			}
			enc[1].Data = bytes.Clone(enc[1].Data)
			enc[1].Data[len(enc[1].Data)-1] ^= 1
			_, err = receiverVerifier(t, p).Verify(env, enc)
			wantCode(t, err, FailedDecryption, "authentication tag")
		})
	}
}
