package main

import (
	"errors"
	"net"
	"sync"
	"syscall"
)

func init() { floorModes = append(floorModes, "epoll") }

// serveEpoll is the "epoll" floor: the accepted connections and their
// upstream ones leave Go's poller (their descriptors are duplicated and
// the Go connections closed) for one epoll set that one goroutine waits
// on, level-triggered, relaying whatever is readable to its peer. A write
// the peer cannot take whole waits in pending, and its source is not read
// until the peer drains it.
func serveEpoll(ln net.Listener, upstream string) error {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	l := &epollLoop{ep: ep, ends: map[int32]*epollEnd{}}
	go l.run()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		u, err := net.Dial("tcp", upstream)
		if err != nil {
			c.Close()
			continue
		}
		a, errA := detach(c)
		b, errB := detach(u)
		if err := errors.Join(errA, errB); err != nil {
			for _, fd := range []int{a, b} {
				if fd >= 0 {
					syscall.Close(fd)
				}
			}
			continue
		}
		l.add(a, b)
	}
}

// detach returns a descriptor of c's socket of its own (non-blocking, as
// Go made it) and closes c, which takes the socket out of Go's poller.
func detach(c net.Conn) (int, error) {
	defer c.Close()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var dupErr error
	if err := rc.Control(func(s uintptr) { fd, dupErr = syscall.Dup(int(s)) }); err != nil {
		return -1, err
	}
	return fd, dupErr
}

type epollLoop struct {
	ep   int
	mu   sync.Mutex // ends: added by the accepting goroutine
	ends map[int32]*epollEnd
}

// epollEnd is one socket of a relayed pair.
type epollEnd struct {
	fd      int32
	peer    *epollEnd
	pending []byte // read from peer, not yet written here
	watched uint32 // the events epoll watches for
}

// want is what e waits for: to be read while its peer can take more, to
// be written while it has bytes pending.
func (e *epollEnd) want() uint32 {
	var ev uint32
	if len(e.peer.pending) == 0 {
		ev |= syscall.EPOLLIN | syscall.EPOLLRDHUP
	}
	if len(e.pending) > 0 {
		ev |= syscall.EPOLLOUT
	}
	return ev
}

// add relays between a and b. They are in the epoll set before the loop
// can find them: an event that comes first finds nothing and, level-
// triggered, comes again.
func (l *epollLoop) add(a, b int) {
	x, y := &epollEnd{fd: int32(a)}, &epollEnd{fd: int32(b)}
	x.peer, y.peer = y, x
	for _, e := range []*epollEnd{x, y} {
		e.watched = e.want()
		if syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_ADD, int(e.fd), &syscall.EpollEvent{Events: e.watched, Fd: e.fd}) != nil {
			l.close(x)
			return
		}
	}
	l.mu.Lock()
	l.ends[x.fd], l.ends[y.fd] = x, y
	l.mu.Unlock()
}

func (l *epollLoop) run() {
	evs := make([]syscall.EpollEvent, 256)
	buf := make([]byte, 32<<10)
	for {
		n, err := syscall.EpollWait(l.ep, evs, -1)
		if err != nil {
			continue // EINTR
		}
		for _, ev := range evs[:n] {
			l.mu.Lock()
			e := l.ends[ev.Fd]
			l.mu.Unlock()
			if e == nil {
				continue // closed earlier in this batch
			}
			if len(e.pending) > 0 && !l.write(e) {
				continue
			}
			if len(e.peer.pending) > 0 && ev.Events&(syscall.EPOLLERR|syscall.EPOLLHUP) != 0 {
				// Unread while its peer drains, and reported again at once,
				// level-triggered: the pair is over.
				l.close(e)
				continue
			}
			if len(e.peer.pending) == 0 && ev.Events&^syscall.EPOLLOUT != 0 && !l.read(e, buf) {
				continue
			}
			if !l.rearm(e) || !l.rearm(e.peer) {
				l.close(e)
			}
		}
	}
}

// read reads what e has and writes it to its peer, keeping what the peer
// cannot take yet. It says whether the pair is still open.
func (l *epollLoop) read(e *epollEnd, buf []byte) bool {
	n, err := syscall.Read(int(e.fd), buf)
	if err == syscall.EAGAIN {
		return true
	}
	if n <= 0 {
		l.close(e) // the end of the stream, or an error
		return false
	}
	e.peer.pending = append(e.peer.pending, buf[:n]...)
	return l.write(e.peer)
}

// write writes what e has pending, as much as it takes now. It says
// whether the pair is still open.
func (l *epollLoop) write(e *epollEnd) bool {
	for len(e.pending) > 0 {
		n, err := syscall.Write(int(e.fd), e.pending)
		if err == syscall.EAGAIN {
			return true
		}
		if err != nil {
			l.close(e)
			return false
		}
		e.pending = e.pending[n:]
	}
	e.pending = nil
	return true
}

// rearm has epoll watch what e wants, where that changed.
func (l *epollLoop) rearm(e *epollEnd) bool {
	want := e.want()
	if want == e.watched {
		return true
	}
	e.watched = want
	return syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_MOD, int(e.fd), &syscall.EpollEvent{Events: want, Fd: e.fd}) == nil
}

// close closes both ends of e's pair.
func (l *epollLoop) close(e *epollEnd) {
	l.mu.Lock()
	delete(l.ends, e.fd)
	delete(l.ends, e.peer.fd)
	l.mu.Unlock()
	for _, x := range []*epollEnd{e, e.peer} {
		_ = syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_DEL, int(x.fd), nil)
		_ = syscall.Close(int(x.fd))
	}
}
