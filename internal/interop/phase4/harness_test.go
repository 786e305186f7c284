package phase4_test

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4/wssec/wssectest"
)

// binDir holds the txinbox binary, built (with -race) by the first test
// that starts serve: a run whose tests skip builds nothing.
var (
	binDir    string
	buildOnce sync.Once
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// txinboxBin returns the built txinbox binary.
func txinboxBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "txinbox-phase4-"); buildErr != nil {
			return
		}
		build := exec.Command("go", "build", "-race", "-o", filepath.Join(binDir, "txinbox"), "./cmd/txinbox")
		build.Dir = filepath.Join(here(), "..", "..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building txinbox: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "txinbox")
}

// here is this package's directory: the Maven project's.
func here() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// partnerClasspath is the classpath of the built Maven project
// (.ci/build-phase4). Without it, or without java, the test skips, and
// fails under CI=true.
func partnerClasspath(t *testing.T) string {
	t.Helper()
	fail := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the phase4 partner is required in CI: %s", why)
		}
		t.Skipf("no phase4 partner (run .ci/build-phase4; needs a JDK 17 and Maven): %s", why)
	}
	if _, err := exec.LookPath("java"); err != nil {
		fail(err.Error())
	}
	deps, err := os.ReadFile(filepath.Join(here(), "target", "classpath.txt"))
	if err != nil {
		fail(err.Error())
	}
	classes := filepath.Join(here(), "target", "classes")
	if _, err := os.Stat(filepath.Join(classes, "txinbox", "interop", "Phase4Partner.class")); err != nil {
		fail(err.Error())
	}
	return classes + string(os.PathListSeparator) + strings.TrimSpace(string(deps))
}

// keys are the files of both sides' keys: phase4 is the test PKI's Leaf,
// txinbox its Receiver, both issued by its CA.
type keys struct {
	phase4Key, phase4Cert   string // PKCS#8 DER, PEM
	txinboxKey, txinboxCert string // PEM, PEM
	ca                      string // PEM
}

func writeKeys(t *testing.T, dir string) keys {
	t.Helper()
	p := wssectest.Get(t)
	var k keys
	k.phase4Key, k.phase4Cert = wssectest.WriteFiles(t, dir, "phase4", p.LeafKey, p.Leaf)
	der, err := x509.MarshalPKCS8PrivateKey(p.ReceiverKey)
	if err != nil {
		t.Fatal(err)
	}
	k.txinboxKey, k.txinboxCert, k.ca = filepath.Join(dir, "txinbox.key.pem"), filepath.Join(dir, "txinbox.cert.pem"), filepath.Join(dir, "ca.pem")
	wssectest.Write(t, k.txinboxKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	wssectest.Write(t, k.txinboxCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Receiver.Raw}))
	wssectest.Write(t, k.ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.CA.Raw}))
	return k
}

// verdict is what Phase4Partner send prints: phase4's own judgement of
// txinbox's answer.
type verdict struct {
	Result   string   // EAS4UserMessageSendResult: SUCCESS, AS4_ERROR_MESSAGE_RECEIVED, ...
	Retries  int      // phase4's own HTTP retries
	NRR      string   // ValidatingAS4SignalMsgConsumer: "success", "error: ...", "not applicable"
	SignalID string   // the receipt's or error's MessageId
	RefTo    string   // its RefToMessageId
	Receipt  bool     // an eb:Receipt came back
	Errors   []string // the ebMS error codes that came back
}

// send runs phase4's client once with the options (key=value) and returns
// its verdict.
func send(t *testing.T, cp string, opts ...string) verdict {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("java", append([]string{"-cp", cp, "txinbox.interop.Phase4Partner", "send"}, opts...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("phase4 send: %v\n%s%s", err, stdout.Bytes(), stderr.Bytes())
	}
	var v verdict
	line := lastLine(stdout.String())
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		t.Fatalf("phase4 verdict %q: %v\n%s", line, err, stderr.Bytes())
	}
	t.Logf("phase4 %v: %+v", opts[len(opts)-1], v)
	if testing.Verbose() && v.Result != "SUCCESS" {
		t.Logf("phase4 stderr:\n%s", stderr.Bytes())
	}
	return v
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// serveProc is a running `txinbox serve`.
type serveProc struct {
	cmd    *exec.Cmd
	url    string
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{}
}

// Log is what serve logged so far.
func (p *serveProc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// startServe starts txinbox serve with the AS4 endpoint on a free port and
// returns once it listens.
func startServe(t *testing.T, args ...string) *serveProc {
	t.Helper()
	p := &serveProc{done: make(chan struct{})}
	p.cmd = exec.Command(txinboxBin(t), append([]string{"serve", "--log-format", "json", "--as4-listen", "127.0.0.1:0"}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TXINBOX_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	out, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.Write(append(sc.Bytes(), '\n'))
			p.mu.Unlock()
			var rec struct{ Msg string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil {
				if u, ok := strings.CutPrefix(rec.Msg, "txinbox: as4 endpoint listening on "); ok {
					p.url = u
				}
				if strings.HasPrefix(rec.Msg, "txinbox: ready: ") {
					ready <- p.url
				}
			}
		}
		io.Copy(io.Discard, out) //nolint:errcheck // draining
		p.cmd.Wait()             //nolint:errcheck // the exit code is checked by stop
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill() //nolint:errcheck // it may have exited
		<-p.done
	})
	select {
	case <-ready:
	case <-p.done:
		t.Fatalf("serve exited before it was ready:\n%s", p.Log())
	case <-time.After(2 * time.Minute):
		t.Fatalf("serve not ready within 2 minutes:\n%s", p.Log())
	}
	return p
}

// stop sends SIGTERM and waits for serve to exit 0.
func (p *serveProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatalf("serve did not stop within a minute:\n%s", p.Log())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, p.Log())
	}
}

var messageIDRe = regexp.MustCompile(`MessageId>([^<]+)</`)

// proxy stands between the sender and the receiver, as the network would:
// it passes requests on, and for the MessageIds the test names drops the
// first answer (the connection closes after the receiver answered, so the
// sender resends a message the receiver has) or changes bytes of the
// request or the answer on their way.
type proxy struct {
	target string
	mu     sync.Mutex
	seen   map[string]int       // requests per MessageId
	drop   map[string]bool      // drop the first answer of these
	tamper map[string][2]string // replace from by to in these requests
	// tamperAnswer replaces from by to in the answers to these
	tamperAnswer map[string][2]string
	bodies       map[string][]string // the receiver's answers, per MessageId
}

func newProxy(target string) *proxy {
	return &proxy{target: target, seen: map[string]int{}, drop: map[string]bool{},
		tamper: map[string][2]string{}, tamperAnswer: map[string][2]string{}, bodies: map[string][]string{}}
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var id string
	if m := messageIDRe.FindSubmatch(body); m != nil {
		id = string(m[1])
	}
	p.mu.Lock()
	p.seen[id]++
	first := p.seen[id] == 1
	drop := p.drop[id] && first
	if rep, ok := p.tamper[id]; ok {
		body = bytes.Replace(body, []byte(rep[0]), []byte(rep[1]), 1)
	}
	p.mu.Unlock()
	req, err := http.NewRequest(http.MethodPost, p.target, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	p.mu.Lock()
	p.bodies[id] = append(p.bodies[id], string(answer))
	if rep, ok := p.tamperAnswer[id]; ok {
		answer = bytes.Replace(answer, []byte(rep[0]), []byte(rep[1]), 1)
	}
	p.mu.Unlock()
	if drop {
		// serve has the message and answered; phase4 never sees it.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(resp.StatusCode)
	w.Write(answer) //nolint:errcheck // the client's problem
}

// dropFirst makes the proxy lose serve's first answer to the MessageId.
func (p *proxy) dropFirst(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drop[id] = true
}

// changeRequests makes the proxy replace from by to in the MessageId's
// requests.
func (p *proxy) changeRequests(id, from, to string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tamper[id] = [2]string{from, to}
}

// changeAnswers makes the proxy replace from by to in the answers to the
// MessageId.
func (p *proxy) changeAnswers(id, from, to string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tamperAnswer[id] = [2]string{from, to}
}

// requests is how many requests with the MessageId passed.
func (p *proxy) requests(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[id]
}

// answers are serve's answers to the MessageId's requests, in order.
func (p *proxy) answers(id string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.bodies[id]...)
}

// syncBuffer is a bytes.Buffer for a process's output read while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
