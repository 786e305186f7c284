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
	}
}
