package framework

import (
	"errors"
	"net"
	"strconv"
)

// FreePorts returns n distinct ports on 127.0.0.1 that nothing listens on, for a process
// or listener a test starts. It holds all n open until it has them, so they differ, and
// releases them before it returns: another process may take one in between, which is
// unlikely enough for tests.
func FreePorts(n int) (ports []int, err error) {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			err = errors.Join(err, l.Close())
		}
		if err != nil {
			ports = nil
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// LoopbackAddress is host:port of port on 127.0.0.1.
func LoopbackAddress(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
