package as4_test

import (
	"bytes"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkPostNewMessages posts distinct small messages from parallel
// clients (-cpu sets how many per GOMAXPROCS) to an endpoint on
// PostgreSQL: concurrent posts share Submit batches.
func BenchmarkPostNewMessages(b *testing.B) {
	e := newPG(b, options{})
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
