package framework

import (
	"fmt"
	"io"
	"net"
	"sync"
)

// TCPProxy forwards TCP connections on a loopback port to target (an API server: TLS
// passes through, so the server certificate for 127.0.0.1 still matches) and can cut
// them, so a test can take one agent's link to the hub down without stopping the hub.
type TCPProxy struct {
	listener net.Listener
	target   string

	mu     sync.Mutex
	down   bool
	closed bool
	conns  map[net.Conn]struct{}
}

// StartTCPProxy listens on a free loopback port and forwards to target.
func StartTCPProxy(target string) (*TCPProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for a proxy to %s: %w", target, err)
	}
	p := &TCPProxy{listener: l, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	return p, nil
}

// Addr is host:port the proxy accepts connections on.
func (p *TCPProxy) Addr() string { return p.listener.Addr().String() }

func (p *TCPProxy) serve() {
	for {
		in, err := p.listener.Accept()
		if err != nil {
			return
		}
		if !p.track(in) {
			_ = in.Close()
			continue
		}
		go p.forward(in)
	}
}

// track remembers c so that a cut closes it; false when the link is down.
func (p *TCPProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down || p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *TCPProxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *TCPProxy) forward(in net.Conn) {
	defer p.untrack(in)
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = in.Close()
		return
	}
	if !p.track(out) {
		// Cut while dialling.
		_ = out.Close()
		_ = in.Close()
		return
	}
	defer p.untrack(out)
	go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
	_, _ = io.Copy(in, out)
	_ = in.Close()
}

// SetDown cuts every open connection and refuses new ones, or accepts them again.
func (p *TCPProxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			_ = c.Close()
		}
		p.conns = map[net.Conn]struct{}{}
	}
}

// Close stops listening and cuts every connection for good.
func (p *TCPProxy) Close() {
	_ = p.listener.Close()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.SetDown(true)
}
