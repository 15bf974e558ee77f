package main

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestArrivalConn reads from a loopback connection and checks that the
// kernel's receive time comes with the bytes, between the write and the
// read.
func TestArrivalConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ac, err := newArrivalConn(nc)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if ac.arrival() != 0 {
		t.Fatalf("arrival before any read = %d, want 0", ac.arrival())
	}
	// The kernel turns receive stamps on a moment after the option is set
	// (a deferred switch), so the first reads may come unstamped: those
	// read 0, never an older read's time.
	buf := make([]byte, 64)
	for try := 0; ; try++ {
		before := time.Now().UnixNano()
		if _, err := peer.Write([]byte("data: x\n\n")); err != nil {
			t.Fatal(err)
		}
		n, err := io.ReadAtLeast(ac, buf, 9)
		after := time.Now().UnixNano()
		if err != nil || string(buf[:n]) != "data: x\n\n" {
			t.Fatalf("read %q, %v", buf[:n], err)
		}
		got := ac.arrival()
		if got == 0 && try < 10000 {
			continue
		}
		if got < before || got > after {
			t.Fatalf("arrival %d after %d unstamped reads, want within [%d, %d]", got, try, before, after)
		}
		break
	}
	peer.Close()
	if _, err := ac.Read(buf); err != io.EOF {
		t.Errorf("read after the peer closed: %v, want io.EOF", err)
	}
}
