//go:build !linux

package main

import "net"

// arrivalConn is a plain connection where the kernel's receive time is
// not read (arrival_linux.go): arrival reports 0 and only the read time
// is measured.
type arrivalConn struct{ net.Conn }

func newArrivalConn(c net.Conn) (*arrivalConn, error) { return &arrivalConn{Conn: c}, nil }

func (a *arrivalConn) arrival() int64 { return 0 }
