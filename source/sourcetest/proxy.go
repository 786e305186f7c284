package sourcetest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP proxy between consumers and a broker whose connections a
// test can cut, to simulate a network failure. A harness points its
// consumers at Addr and implements Broker.Interrupt with Cut.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	down  bool // new connections are closed at once: the target is unreachable
}

// NewProxy listens on a loopback port and forwards each connection to
// target; it is closed at the test's cleanup.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's "host:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every open connection; new ones are accepted.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// SetDown makes the target unreachable (every connection cut, new ones
// closed at once) or reachable again.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
	if down {
		p.Cut()
	}
}

// Close stops listening and cuts every connection.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Cut()
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *Proxy) forward(client net.Conn) {
	p.mu.Lock()
	down := p.down
	p.mu.Unlock()
	if down {
		client.Close()
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src) //nolint:errcheck // ends when either side closes
		dst.Close()
		src.Close()
	}
	wg.Add(2)
	go pipe(server, client)
	go pipe(client, server)
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}
