package loadgen

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/arrival"
)

// On loopback the kernel queues the bytes before the writer's write
// returns, so a read's stamp lies between the write and the read, and a
// later read's stamp is its own bytes'.
func TestStampedConnReadsArrival(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	dialed, err := dialStamped(&net.Dialer{})(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	client, ok := dialed.(*arrival.Conn)
	if !ok {
		t.Skipf("this kernel gives no receive timestamps (%T)", dialed)
	}
	server := <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	defer server.Close()

	buf := make([]byte, 64)
	// Until the kernel has turned stamps on, reads come unstamped.
	if !untilStamped(t, func() bool {
		if _, err := server.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(client, buf[:1]); err != nil {
			t.Fatal(err)
		}
		return client.LastArrival() != 0
	}) {
		t.Fatal("no read stamped")
	}
	var prev int64
	for i, msg := range []string{"data: one\n\n", "data: two\n\n"} {
		wrote := time.Now()
		if _, err := server.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		readAt := time.Now()
		n, err := io.ReadAtLeast(client, buf, len(msg))
		if err != nil || string(buf[:n]) != msg {
			t.Fatalf("read %q, %v; want %q", buf[:n], err, msg)
		}
		stamp := client.LastArrival()
		if stamp < wrote.UnixNano() || stamp > readAt.UnixNano() {
			t.Errorf("read %d: stamp %d not between the write (%d) and the read (%d)", i, stamp, wrote.UnixNano(), readAt.UnixNano())
		}
		if stamp <= prev {
			t.Errorf("read %d: stamp %d not after the last read's %d", i, stamp, prev)
		}
		prev = stamp
	}

	// The peer's close reads as io.EOF, as from a plain connection.
	server.Close()
	if n, err := client.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("read after the peer closed: %d, %v; want 0, EOF", n, err)
	}
}
