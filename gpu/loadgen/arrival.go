package loadgen

import (
	"context"
	"net"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/arrival"
)

// Arrival stamps: on Linux the default transport's connections ask the
// kernel for the time each read's bytes arrived (SO_TIMESTAMPNS), and a
// chunk is timed by the read that brought its last byte in, not by when
// the client got round to parsing it. Under load the client's goroutine
// can wait for a core for a millisecond or more after the bytes are there;
// that wait is the client's, and the kernel's stamp leaves it out of TTFT
// and the decode rate. Elsewhere (another OS, TLS, a caller's own
// http.Client, a test clock) a chunk is timed when it is read, as before,
// and so is a read the kernel gave no stamp (it turns stamps on for every
// socket a moment after the first asks, so a process's first reads may
// have none).

// maxArrivalLag bounds how far before now an arrival stamp is believed:
// a stamp older than this is not a chunk that just came in.
const maxArrivalLag = time.Minute

// arrivedAt is when a chunk read at now arrived, by its connection's last
// read: now less the lag the stamp says, so the result keeps now's
// monotonic reading. ok is false without a believable stamp.
func arrivedAt(now time.Time, conn arrival.Stamped) (at time.Time, ok bool) {
	ns := conn.LastArrival()
	if ns <= 0 {
		return now, false
	}
	lag := time.Duration(now.UnixNano() - ns)
	if lag < 0 || lag > maxArrivalLag {
		return now, false
	}
	return now.Add(-lag), true
}

// dialStamped dials as d does and asks for arrival stamps where the
// system gives them.
func dialStamped(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return arrival.Stamp(c), nil
	}
}
