//go:build !linux

package loadgen

import "net"

// stampArrivals returns c: arrival stamps are read on Linux only.
func stampArrivals(c net.Conn) net.Conn { return c }
