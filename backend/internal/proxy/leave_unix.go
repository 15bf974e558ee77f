//go:build unix

package proxy

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
	"time"
)

// watchConn calls gone once conn's peer has closed it (or reset it),
// until stop is called. It peeks, so a request the client pipelined stays
// for the server to read; once a byte of one is waiting the watch ends,
// as it cannot see past it (empty lines it takes and goes on). A TLS
// connection is not watched.
// During the watch conn has no read deadline: the request was read whole
// before the handler ran, and fasthttp sets the next one's before reading
// it.
func watchConn(conn net.Conn, gone func()) (stop func()) {
	for {
		if _, ok := conn.(*tls.Conn); ok {
			return func() {} // a peek sees records, not the end of the stream
		}
		w, ok := conn.(interface{ NetConn() net.Conn }) // the server's wrapper
		if !ok {
			break
		}
		conn = w.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return func() {}
	}
	rc, err := sc.SyscallConn()
	if err != nil || conn.SetReadDeadline(time.Time{}) != nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b [64]byte
		// Ends with the deadline stop sets, with gone called, or at a byte
		// of a request.
		_ = rc.Read(func(fd uintptr) bool {
			for {
				n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
				switch {
				case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR):
					return false // nothing yet: wait until readable
				case err != nil || n == 0:
					gone() // reset, or closed: the end of the stream
					return true
				}
				// Empty lines a client sent after its body (RFC 9112
				// section 2.2 has a server ignore them before a request)
				// are taken, so that the watch sees past them.
				k := 0
				for k < n && (b[k] == '\r' || b[k] == '\n') {
					k++
				}
				if k == 0 {
					return true // a pipelined request: not ours to read
				}
				if _, _, err := syscall.Recvfrom(int(fd), b[:k], syscall.MSG_DONTWAIT); err != nil {
					return true
				}
			}
		})
	}()
	return func() {
		_ = conn.SetReadDeadline(time.Unix(1, 0)) // wakes the read
		<-done
		_ = conn.SetReadDeadline(time.Time{})
	}
}
