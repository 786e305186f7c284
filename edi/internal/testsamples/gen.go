package testsamples

import (
	"io"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// Repeat returns a reader of head, then body count times (at least once),
// then tail. It allocates nothing per Read, so the memory a parser uses on
// it can be measured.
func Repeat(head, body, tail []byte, count int64) io.Reader {
	return &repeater{parts: [][]byte{head, body, tail}, count: max(count, 1)}
}

type repeater struct {
	parts [][]byte
	count int64 // repetitions of parts[1] still to produce
	stage int   // 0 head, 1 body, 2 tail, 3 done
	pos   int
}

// Read implements io.Reader.
func (g *repeater) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && g.stage < 3 {
		part := g.parts[g.stage]
		k := copy(p[n:], part[g.pos:])
		n += k
		g.pos += k
		if g.pos < len(part) {
			continue
		}
		g.pos = 0
		if g.stage == 1 {
			g.count--
			if g.count > 0 {
				continue
			}
		}
		g.stage++
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Memory is what Measure observed.
type Memory struct {
	PeakHeap   uint64 // highest sampled heap object bytes
	TotalAlloc uint64 // bytes allocated during the run
}

// Measure runs f while sampling the live heap every millisecond.
func Measure(f func()) Memory {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var (
		peak uint64
		wg   sync.WaitGroup
	)
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(stop)
	wg.Wait()
	runtime.ReadMemStats(&after)
	return Memory{PeakHeap: peak, TotalAlloc: after.TotalAlloc - before.TotalAlloc}
}

// LargeSize is the size of generated large inputs: 200 MB, or 20 MB under
// the race detector.
func LargeSize() int64 {
	if RaceEnabled {
		return 20 << 20
	}
	return 200 << 20
}
