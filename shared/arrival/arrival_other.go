//go:build !linux

package arrival

import "net"

// Stamp returns c: arrival stamps are read on Linux only.
func Stamp(c net.Conn) net.Conn { return c }
