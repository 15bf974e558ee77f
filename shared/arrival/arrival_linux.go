package arrival

import (
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Conn is a TCP connection whose reads go through recvmsg to pick
// up the kernel's SCM_TIMESTAMPNS: for TCP it is the receive time of the
// last segment the read consumed, so it is never earlier than the arrival
// of any byte the read returned.
type Conn struct {
	*net.TCPConn
	raw  syscall.RawConn
	oob  []byte
	last atomic.Int64 // Unix ns; written by whichever goroutine reads
}

// Stamp turns on receive timestamps for a TCP connection and returns it
// as a *Conn; any other connection, or one the kernel refuses them for, is
// returned as it is.
func Stamp(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c
	}
	return &Conn{TCPConn: tc, raw: raw, oob: make([]byte, syscall.CmsgSpace(int(unsafe.Sizeof(syscall.Timespec{}))))}
}

// Read reads as the TCP connection would (deadlines and cancellation
// included: RawConn.Read waits through the runtime's poller) and keeps
// the read's arrival stamp.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n, oobn int
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		for {
			n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), p, c.oob, 0)
			if rerr == nil {
				raceAcquireIO(fd)
			}
			if rerr != syscall.EINTR {
				return rerr != syscall.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: rerr}
	case n == 0:
		return 0, io.EOF
	}
	c.last.Store(timestampNs(c.oob[:oobn]))
	return n, nil
}

// LastArrival is the kernel's receive time of the newest bytes the last
// read returned, in Unix nanoseconds; 0 when it gave none.
func (c *Conn) LastArrival() int64 { return c.last.Load() }

// timestampNs is the SCM_TIMESTAMPNS in a read's control messages, in
// Unix ns; 0 when there is none.
func timestampNs(oob []byte) int64 {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS &&
			len(m.Data) >= int(unsafe.Sizeof(syscall.Timespec{})) {
			return (*syscall.Timespec)(unsafe.Pointer(&m.Data[0])).Nano()
		}
	}
	return 0
}
