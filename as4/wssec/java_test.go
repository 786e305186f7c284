package wssec

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The Java peer: Apache WSS4J 1.6 and Santuario from Debian's
// libwss4j-java and libxml-security-java, on openjdk-17-jdk-headless.
// testdata/java/WssPeer.java is compiled once per test process; each test
// runs one JVM for all its commands.
var javaJars = []string{"wss4j.jar", "xmlsec.jar", "commons-logging.jar", "slf4j-api.jar", "slf4j-nop.jar"}

type javaPeer struct{ classpath string }

var (
	peerOnce sync.Once
	peer     *javaPeer
	peerErr  error
)

// getJavaPeer returns the compiled peer. Without Java or the jars the test
// is skipped, unless CI=true, where it fails.
func getJavaPeer(t *testing.T) *javaPeer {
	t.Helper()
	peerOnce.Do(func() { peer, peerErr = compilePeer() })
	if peerErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the Java WS-Security peer is required in CI: %v", peerErr)
		}
		t.Skipf("no Java WS-Security peer (install libwss4j-java libxml-security-java openjdk-17-jdk-headless): %v", peerErr)
	}
	return peer
}

func compilePeer() (*javaPeer, error) {
	javac, err := exec.LookPath("javac")
	if err != nil {
		return nil, err
	}
	var cp []string
	for _, j := range javaJars {
		p := filepath.Join("/usr/share/java", j)
		if _, err := os.Stat(p); err != nil {
			return nil, err
		}
		cp = append(cp, p)
	}
	dir, err := os.MkdirTemp("", "wssec-java-")
	if err != nil {
		return nil, err
	}
	src, _ := filepath.Abs("testdata/java/WssPeer.java")
	out, err := exec.Command(javac, "-cp", strings.Join(cp, ":"), "-d", dir, src).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("javac: %v: %s", err, out)
	}
	return &javaPeer{classpath: strings.Join(append([]string{dir}, cp...), ":")}, nil
}

// run runs the commands in one JVM and returns one result line each.
func (p *javaPeer) run(t *testing.T, cmds [][]string) []string {
	t.Helper()
	var b strings.Builder
	for _, c := range cmds {
		b.WriteString(strings.Join(c, "\t") + "\n")
	}
	file := filepath.Join(t.TempDir(), "commands.txt")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command("java", "-cp", p.classpath, "WssPeer", file)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("java: %v\n%s%s", err, out, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(cmds) {
		t.Fatalf("%d results for %d commands:\n%s", len(lines), len(cmds), out)
	}
	return lines
}

// writeKeys writes the test signer's PKCS#8 key and certificate and the
// CA certificate for the peer.
func writeKeys(t *testing.T, dir string) (key, cert, ca string) {
	t.Helper()
	p := getPKI(t)
	der, err := x509.MarshalPKCS8PrivateKey(p.leafKey)
	if err != nil {
		t.Fatal(err)
	}
	key, cert, ca = filepath.Join(dir, "key.der"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "ca.pem")
	write(t, key, der)
	write(t, cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.leaf.Raw}))
	write(t, ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.ca.Raw}))
	return key, cert, ca
}

func write(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

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
	jp := getJavaPeer(t)
	p := getPKI(t)
	dir := t.TempDir()
	key, cert, ca := writeKeys(t, dir)

	goSigned, err := p.signer(t).Sign([]byte(userMessage), nil)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go-signed.xml"), goSigned)
	write(t, filepath.Join(dir, "go-tampered.xml"), bytes.Replace(goSigned, []byte("invoice-42"), []byte("invoice-43"), 1))
	write(t, filepath.Join(dir, "unsigned.xml"), []byte(userMessage))
	cmds := [][]string{
		{"sign", key, cert, filepath.Join(dir, "unsigned.xml"), filepath.Join(dir, "java-signed.xml")},
		{"verify", ca, filepath.Join(dir, "go-signed.xml")},
		{"verify", ca, filepath.Join(dir, "go-tampered.xml")},
	}
	for i, c := range c14nCases {
		in := filepath.Join(dir, fmt.Sprintf("c14n-%d.xml", i))
		write(t, in, []byte(c))
		cmds = append(cmds, []string{"c14n", in, in + ".out"})
	}
	res := jp.run(t, cmds)

	if res[0] != "ok signed" {
		t.Fatalf("WSS4J signing: %s", res[0])
	}
	javaSigned, err := os.ReadFile(filepath.Join(dir, "java-signed.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.verifier(t).Verify(javaSigned, nil); err != nil {
		t.Fatalf("WSS4J's signature refused: %v\n%s", err, javaSigned)
	}
	_, err = p.verifier(t).Verify(bytes.Replace(javaSigned, []byte("invoice-42"), []byte("invoice-43"), 1), nil)
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
