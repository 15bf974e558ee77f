//go:build !linux

package main

import (
	"errors"
	"net"
)

func serveEpoll(net.Listener, string) error { return errors.New("the epoll floor relay needs Linux") }
