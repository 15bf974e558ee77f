package main

// The floor (-floor): what relaying the same streams costs a Go process
// that does nothing else, so that the proxy's figures and nginx's can be
// read against what the Go runtime itself costs on this machine. Two
// minimal relays, each a side of its own: "relay", two goroutines per
// connection copying bytes both ways through a buffer (a proxy that meters
// must see the bytes, so no splice), and "epoll", one goroutine serving
// every connection from one epoll set (Linux). Neither parses HTTP: each
// client connection is tied to a connection of its own to the engine, so
// its keep-alive requests follow it one to one. Neither meters anything.
// Each is this program run again (floorCmd), a process of its own whose
// CPU is read like the proxy's.

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
)

// floorCmd, as the first argument, runs this program as a floor relay:
// floor-relay MODE LISTEN-ADDR UPSTREAM-ADDR.
const floorCmd = "floor-relay"

// floorModes are the floor relays this system has.
var floorModes = []string{"relay"}

// floorHow says what each floor relay is.
var floorHow = map[string]string{
	"relay": "a goroutine each way per connection",
	"epoll": "one goroutine on one epoll set",
}

// startFloor runs a floor relay of mode in front of engineAddr.
func startFloor(ctx context.Context, home, mode, engineAddr string) (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p, err := start(ctx, mode, self, home, nil, floorCmd, mode, addr, engineAddr)
	if err != nil {
		return nil, err
	}
	return p.up(ctx, addr, "/health") // the engine's, through the relay
}

// floorMain is this program run as a floor relay; it serves until killed.
func floorMain(args []string) {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: benchproxy", floorCmd, "MODE LISTEN-ADDR UPSTREAM-ADDR")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", args[1])
	if err == nil {
		err = serveFloor(ln, args[0], args[2])
	}
	fmt.Fprintln(os.Stderr, "floor relay:", err)
	os.Exit(1)
}

// serveFloor relays every connection ln accepts to upstream, the mode's
// way, until ln is closed.
func serveFloor(ln net.Listener, mode, upstream string) error {
	switch mode {
	case "relay":
		return serveCopy(ln, upstream)
	case "epoll":
		return serveEpoll(ln, upstream)
	}
	return fmt.Errorf("mode %q: want one of %v", mode, floorModes)
}

// serveCopy is the "relay" floor: a goroutine each way per connection.
func serveCopy(ln net.Listener, upstream string) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				return
			}
			defer u.Close()
			go func() {
				copyThrough(u, c)
				_ = u.(*net.TCPConn).CloseWrite()
			}()
			copyThrough(c, u)
		}()
	}
}

// copyThrough copies src to dst through a buffer: the wrappers hide the
// connections' ReadFrom and WriteTo, which would splice.
func copyThrough(dst io.Writer, src io.Reader) {
	_, _ = io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, make([]byte, 32<<10))
}
