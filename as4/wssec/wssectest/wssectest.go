// Package wssectest provides what the WS-Security tests of wssec and as4
// share: a test PKI made once per process, and the independent Java peer
// (Apache WSS4J 1.6 and Santuario from Debian's libwss4j-java and
// libxml-security-java, on openjdk-17-jdk-headless), WssPeer.java,
// compiled once per process and run as one JVM per batch of commands.
package wssectest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	_ "embed"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// PKI is a test CA with a partner certificate, an expired certificate of
// the same CA, and an unrelated CA with its own leaf. All keys are RSA
// 2048.
type PKI struct {
	CA, OtherCA           *x509.Certificate
	CAKey, OtherCAKey     *rsa.PrivateKey
	Leaf, OtherLeaf       *x509.Certificate
	LeafKey, OtherLeafKey *rsa.PrivateKey
	Expired               *x509.Certificate
	ExpiredKey            *rsa.PrivateKey
	Receiver              *x509.Certificate // a second leaf of CA, for the other side
	ReceiverKey           *rsa.PrivateKey
}

var (
	pkiOnce sync.Once
	pki     *PKI
	pkiErr  error
	serial  atomic.Int64
)

// Get returns the process's test PKI, made on first use.
func Get(t testing.TB) *PKI {
	t.Helper()
	pkiOnce.Do(func() { pki, pkiErr = newPKI() })
	if pkiErr != nil {
		t.Fatal(pkiErr)
	}
	return pki
}

func newPKI() (*PKI, error) {
	p := &PKI{}
	now := time.Now()
	from, to := now.Add(-time.Hour), now.Add(365*24*time.Hour)
	keys, err := testKeys()
	if err != nil {
		return nil, err
	}
	for i, k := range []**rsa.PrivateKey{&p.CAKey, &p.OtherCAKey, &p.LeafKey, &p.OtherLeafKey, &p.ExpiredKey, &p.ReceiverKey} {
		*k = keys[i]
	}
	certs := []struct {
		out      **x509.Certificate
		cn       string
		ca       bool
		from, to time.Time
		key      *rsa.PrivateKey
		parent   **x509.Certificate
		signer   *rsa.PrivateKey
	}{
		{&p.CA, "txinbox test CA", true, from, to, p.CAKey, nil, p.CAKey},
		{&p.OtherCA, "other CA", true, from, to, p.OtherCAKey, nil, p.OtherCAKey},
		{&p.Leaf, "partner-a", false, from, to, p.LeafKey, &p.CA, p.CAKey},
		{&p.OtherLeaf, "intruder", false, from, to, p.OtherLeafKey, &p.OtherCA, p.OtherCAKey},
		{&p.Expired, "partner-old", false, now.Add(-48 * time.Hour), now.Add(-24 * time.Hour), p.ExpiredKey, &p.CA, p.CAKey},
		{&p.Receiver, "txinbox-receiver", false, from, to, p.ReceiverKey, &p.CA, p.CAKey},
	}
	for _, c := range certs {
		n := serial.Add(1) + 1000
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(n), Subject: pkix.Name{CommonName: c.cn, Organization: []string{"txinbox test"}, Country: []string{"BE"}},
			NotBefore: c.from, NotAfter: c.to, IsCA: c.ca, BasicConstraintsValid: true,
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
			SubjectKeyId: big.NewInt(n * 7919).Bytes(),
		}
		parent := tmpl
		if c.parent != nil {
			parent = *c.parent
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &c.key.PublicKey, c.signer)
		if err != nil {
			return nil, err
		}
		if *c.out, err = x509.ParseCertificate(der); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// testkeys.pem holds six RSA 2048 keys made with openssl genpkey for
// these tests only: generating them in every test (and fuzz worker)
// process took seconds. The certificates are made at run time, valid
// around now.
//
//go:embed testkeys.pem
var testKeysPEM []byte

func testKeys() ([]*rsa.PrivateKey, error) {
	var keys []*rsa.PrivateKey
	rest := testKeysPEM
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k.(*rsa.PrivateKey))
	}
	if len(keys) < 6 {
		return nil, fmt.Errorf("testkeys.pem holds %d keys, want 6", len(keys))
	}
	return keys, nil
}

// Roots returns a pool with the test CA.
func (p *PKI) Roots() *x509.CertPool {
	roots := x509.NewCertPool()
	roots.AddCert(p.CA)
	return roots
}

// WriteFiles writes key (PKCS#8 DER) and certificate (PEM) files for the
// peer and returns their names.
func WriteFiles(t testing.TB, dir, name string, key *rsa.PrivateKey, cert *x509.Certificate) (keyFile, certFile string) {
	t.Helper()
	keyFile, certFile = filepath.Join(dir, name+".key.der"), filepath.Join(dir, name+".cert.pem")
	if key != nil {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		Write(t, keyFile, der)
	}
	Write(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}))
	return keyFile, certFile
}

// Write writes a file or fails the test.
func Write(t testing.TB, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

var javaJars = []string{"wss4j.jar", "xmlsec.jar", "commons-logging.jar", "slf4j-api.jar", "slf4j-nop.jar"}

// Peer is the compiled Java peer.
type Peer struct{ classpath string }

var (
	peerOnce sync.Once
	peer     *Peer
	peerErr  error
)

// JavaPeer returns the compiled peer. Without Java or the jars the test is
// skipped, unless CI=true, where it fails.
func JavaPeer(t testing.TB) *Peer {
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

func compilePeer() (*Peer, error) {
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
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return nil, fmt.Errorf("cannot locate WssPeer.java")
	}
	dir, err := os.MkdirTemp("", "wssec-java-")
	if err != nil {
		return nil, err
	}
	src := filepath.Join(filepath.Dir(self), "WssPeer.java")
	out, err := exec.Command(javac, "-cp", strings.Join(cp, ":"), "-d", dir, src).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("javac: %v: %s", err, out)
	}
	return &Peer{classpath: strings.Join(append([]string{dir}, cp...), ":")}, nil
}

// Run runs the commands (see WssPeer.java) in one JVM and returns one
// result line each: "ok ..." or "error ...".
func (p *Peer) Run(t testing.TB, cmds [][]string) []string {
	t.Helper()
	var b strings.Builder
	for _, c := range cmds {
		b.WriteString(strings.Join(c, "\t") + "\n")
	}
	file := filepath.Join(t.TempDir(), "commands.txt")
	Write(t, file, []byte(b.String()))
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
