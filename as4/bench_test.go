package as4_test

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/wssec"
)

// BenchmarkPostNewMessages posts distinct small messages from parallel
// clients (-cpu sets how many per GOMAXPROCS) to an endpoint on
// PostgreSQL: concurrent posts share Submit batches.
func BenchmarkPostNewMessages(b *testing.B) { postNewMessages(b, newPG(b, options{})) }

// BenchmarkPostNewMessagesMySQL is BenchmarkPostNewMessages on MySQL or
// MariaDB (mysqlstore, as4my).
func BenchmarkPostNewMessagesMySQL(b *testing.B) { postNewMessages(b, newMySQL(b, options{})) }

func postNewMessages(b *testing.B, e *endpoint) {
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		client := &http.Client{}
		for pb.Next() {
			id := "bench-" + strconv.FormatInt(n.Add(1), 10) + "@test"
			body, ct := userMessage{id: id, from: "sender", payloads: [][]byte{[]byte("<p/>")}}.mime(false)
			resp, err := client.Post(e.url, ct, bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
}

// BenchmarkPostSecuredMessages posts distinct small signed and encrypted
// messages (prepared before the timer, as a partner's MSH would have them)
// from 8 parallel senders per GOMAXPROCS to an endpoint on PostgreSQL
// that decrypts, verifies and answers with signed NRR receipts. It
// reports messages/s, this process's CPU per message (endpoint and HTTP
// clients; PostgreSQL is another process) and the share of it that the
// endpoint's decryption and verification take, measured by running them
// once more on the same messages alone.
func BenchmarkPostSecuredMessages(b *testing.B) {
	sec := securedEndpoint(b, true)
	e := newPG(b, options{security: sec})
	type prepared struct {
		body []byte
		ct   string
	}
	msgs := make([]prepared, b.N)
	for i := range msgs {
		body, ct, _ := secureMIME(b, userMessage{id: "bench-" + strconv.Itoa(i) + "-" + newID(), from: "sender", payloads: [][]byte{[]byte("<Invoice><ID>1</ID></Invoice>")}}, true)
		msgs[i] = prepared{body, ct}
	}
	var n atomic.Int64
	cpu0 := processCPU()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		client := &http.Client{}
		for pb.Next() {
			m := msgs[n.Add(1)-1]
			resp, err := client.Post(e.url, m.ct, bytes.NewReader(m.body))
			if err != nil {
				b.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.StopTimer()
	cpu := processCPU() - cpu0
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/msg")
	crypto := cryptoCPU(b, sec, msgs[0].body, msgs[0].ct)
	b.ReportMetric(crypto.Seconds()*1000, "crypto-ms/msg")
	b.ReportMetric(100*crypto.Seconds()*float64(b.N)/cpu.Seconds(), "crypto-%")
}

// receiptShape is an ebMS receipt of the size the endpoint signs.
const receiptShape = `<S12:Envelope xmlns:S12="http://www.w3.org/2003/05/soap-envelope" xmlns:eb="http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"><S12:Header><eb:Messaging S12:mustUnderstand="true"><eb:SignalMessage><eb:MessageInfo><eb:Timestamp>2026-11-30T10:00:00.000Z</eb:Timestamp><eb:MessageId>r@txinbox</eb:MessageId><eb:RefToMessageId>m@test</eb:RefToMessageId></eb:MessageInfo><eb:Receipt/></eb:SignalMessage></eb:Messaging></S12:Header><S12:Body/></S12:Envelope>`

// cryptoCPU is the CPU time of the endpoint's cryptography for one
// message: decrypting and verifying it and signing a receipt, the average
// of 200 runs on one goroutine.
func cryptoCPU(b *testing.B, sec as4.SecurityConfig, body []byte, ct string) time.Duration {
	_, params, _ := mime.ParseMediaType(ct)
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	var root []byte
	var atts []wssec.Attachment
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		data, _ := io.ReadAll(p)
		if root == nil {
			root = data
			continue
		}
		atts = append(atts, wssec.Attachment{ContentID: strings.Trim(p.Header.Get("Content-Id"), "<>"), ContentType: p.Header.Get("Content-Type"), Data: data})
	}
	const runs = 200
	start := processCPU()
	for range runs {
		if _, err := sec.Verifier.Verify(root, atts); err != nil {
			b.Fatal(err)
		}
		if _, err := sec.Signer.Sign([]byte(receiptShape), nil); err != nil {
			b.Fatal(err)
		}
	}
	return (processCPU() - start) / runs
}

// processCPU is the user and system CPU time of this process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
