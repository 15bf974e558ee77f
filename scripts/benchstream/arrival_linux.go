package main

import (
	"encoding/binary"
	"io"
	"net"
	"syscall"
)

// arrivalConn reads a TCP connection with recvmsg and SO_TIMESTAMPNS, so
// that each read also says when the kernel received its last bytes: the
// moment a frame reached the client's host, before the client's process
// got around to it. With a thousand clients in one process on the
// server's cores, that process's own queue (each client waiting for the
// others' reads and scans) would otherwise count as the server's lag; a
// thousand browsers on their own machines have no such queue.
type arrivalConn struct {
	net.Conn
	raw  syscall.RawConn
	oob  []byte
	last int64 // unix ns of the kernel's receipt of the last read's data, 0 if unstamped
}

func newArrivalConn(c net.Conn) (*arrivalConn, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return &arrivalConn{Conn: c}, nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, serr
	}
	return &arrivalConn{Conn: c, raw: raw, oob: make([]byte, syscall.CmsgSpace(16))}, nil
}

func (a *arrivalConn) Read(p []byte) (int, error) {
	if a.raw == nil {
		return a.Conn.Read(p)
	}
	var n, oobn int
	var rerr error
	err := a.raw.Read(func(fd uintptr) bool {
		for {
			n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), p, a.oob, 0)
			if rerr != syscall.EINTR {
				return rerr != syscall.EAGAIN // EAGAIN: wait until readable
			}
		}
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	// A read without a stamp (the kernel turns stamping on a moment after
	// the option is set) must not pass for one with the last read's.
	a.last = 0
	msgs, _ := syscall.ParseSocketControlMessage(a.oob[:oobn])
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			a.last = sec*1e9 + nsec
		}
	}
	return n, nil
}

// arrival is the kernel's receipt of the last data read, 0 if unknown.
func (a *arrivalConn) arrival() int64 { return a.last }
