package store

// ring keeps the last len(buf) values added, oldest overwritten first.
type ring[T any] struct {
	buf  []T
	next int // where the next value goes
	n    int // values held, up to len(buf)
}

func newRing[T any](size int) ring[T] { return ring[T]{buf: make([]T, size)} }

func (r *ring[T]) add(v T) {
	r.buf[r.next] = v
	r.next = (r.next + 1) % len(r.buf)
	if r.n < len(r.buf) {
		r.n++
	}
}

// slice copies the values out, oldest first.
func (r *ring[T]) slice() []T {
	out := make([]T, 0, r.n)
	start := (r.next - r.n + len(r.buf)) % len(r.buf)
	for i := 0; i < r.n; i++ {
		out = append(out, r.buf[(start+i)%len(r.buf)])
	}
	return out
}
