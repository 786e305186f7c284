package serve_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// gzipBombRequest is an AS4 message whose one payload is members
// concatenated gzip members of 1 MiB of zeros each (about 1 KB each on
// the wire): 40 GiB in about 41 MB with 40960 members.
func gzipBombRequest(members int) (head, member, tail []byte, contentType string) {
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	env := strings.Replace(serveTestMessage, `<eb:PartInfo/>`, `<eb:PartInfo href="cid:p"><eb:PartProperties><eb:Property name="MimeType">application/xml</eb:Property>`+
		`<eb:Property name="CompressionType">application/gzip</eb:Property></eb:PartProperties></eb:PartInfo>`, 1)
	env = strings.Replace(env, "<S12:Body><invoice>42</invoice></S12:Body>", "<S12:Body/>", 1)
	head = []byte("--B\r\nContent-Type: application/soap+xml\r\n\r\n" + env + "\r\n--B\r\nContent-ID: <p>\r\nContent-Type: application/octet-stream\r\n\r\n")
	return head, z.Bytes(), []byte("\r\n--B--\r\n"), "multipart/related; boundary=B; type=\"application/soap+xml\""
}

// repeated streams head, member n times, tail.
type repeated struct {
	r io.Reader
}

func newRepeated(head, member, tail []byte, n int) (io.Reader, int64) {
	readers := []io.Reader{bytes.NewReader(head)}
	for range n {
		readers = append(readers, bytes.NewReader(member))
	}
	readers = append(readers, bytes.NewReader(tail))
	return repeated{io.MultiReader(readers...)}, int64(len(head) + n*len(member) + len(tail))
}

func (r repeated) Read(p []byte) (int, error) { return r.r.Read(p) }

// procKB returns a field of /proc/PID/status in kB (VmRSS, VmHWM).
func procKB(t *testing.T, pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc to measure memory with: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// startPlainServe builds txinbox without -race (the race detector's
// memory would be measured, not serve's) and runs serve over SQLite; it
// returns the AS4 URL and the process id.
func startPlainServe(t *testing.T) (string, int) {
	dir := t.TempDir()
	// TXINBOX_MEMORY_BIN measures another build (an older version's).
	bin := os.Getenv("TXINBOX_MEMORY_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "txinbox")
		build := exec.Command("go", "build", "-o", bin, "./cmd/txinbox")
		build.Dir = filepath.Join("..", "..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "--db", filepath.Join(dir, "inbox.db"), "--no-purge", "--as4-listen", addr, "--http-listen", "127.0.0.1:0")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	waitFor(t, "serve to listen", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return "http://" + addr + "/as4", cmd.Process.Pid
}

// TestHostileMemory measures the serve binary's peak RSS (VmHWM) while it
// refuses hostile requests, against the bytes in flight: a 40 GiB gzip
// bomb in 41 MB (before: +640 MB for one, 15.7 bytes per byte), sixteen
// of them at once, and 200 slow uploads. The peak must stay within four
// times the request bytes the server holds at once plus 64 MiB (the
// runtime's slack); run with -v for the figures (docs/http.md has them).
func TestHostileMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 700 MB")
	}
	url, pid := startPlainServe(t)
	base := procKB(t, pid, "VmHWM")
	head, member, tail, ct := gzipBombRequest(40960)
	post := func() int {
		body, n := newRepeated(head, member, tail, 40960)
		req, _ := http.NewRequest(http.MethodPost, url, body)
		req.ContentLength = n
		req.Header.Set("Content-Type", ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	_, wire := newRepeated(head, member, tail, 40960)
	if status := post(); status != http.StatusBadRequest {
		t.Fatalf("gzip bomb: status %d, want 400 (EBMS:0303)", status)
	}
	one := procKB(t, pid, "VmHWM") - base
	t.Logf("one gzip bomb of %d MB on the wire (40 GiB decompressed): peak RSS +%d MB (%.1f bytes per byte in flight)", wire>>20, one>>10, float64(one<<10)/float64(wire))
	if limit := 4*wire + 64<<20; one<<10 > limit {
		t.Errorf("one bomb: peak RSS +%d MB, want at most %d MB", one>>10, limit>>20)
	}

	var wg sync.WaitGroup
	statuses := make(chan int, 16)
	for range 16 {
		wg.Go(func() { statuses <- post() })
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	sixteen := procKB(t, pid, "VmHWM") - base
	held := int64(256 << 20) // --max-body-in-flight: what the front lets the server hold at once
	t.Logf("sixteen bombs at once (%d MB sent): statuses %v, peak RSS +%d MB", 16*wire>>20, count, sixteen>>10)
	if limit := 4*held + 64<<20; sixteen<<10 > limit {
		t.Errorf("sixteen bombs: peak RSS +%d MB, want at most %d MB", sixteen>>10, limit>>20)
	}
}
