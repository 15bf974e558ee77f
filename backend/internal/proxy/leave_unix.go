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
// for the server to read; once a byte is waiting (a pipelined request) the
// watch ends, as it cannot see past it. A TLS connection is not watched.
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
		var b [1]byte
		// Ends with the deadline stop sets, or with gone called.
		_ = rc.Read(func(fd uintptr) bool {
			n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch {
			case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR):
				return false // nothing yet: wait until readable
			case err != nil || n == 0:
				gone() // reset, or closed: the end of the stream
			}
			return true
		})
	}()
	return func() {
		_ = conn.SetReadDeadline(time.Unix(1, 0)) // wakes the read
		<-done
		_ = conn.SetReadDeadline(time.Time{})
	}
}
