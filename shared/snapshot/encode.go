package snapshot

// Encode is the snapshot as JSON. It cannot fail: a number JSON cannot
// carry (NaN, ±Inf), which validated events never produce, is written as
// 0 (or null where the field is optional) and reported by sanitized, so
// one bad value can never stop the snapshot or the stream.
func Encode(s *Snapshot) (data []byte, sanitized bool) {
	return AppendJSON(make([]byte, 0, 16<<10), s)
}
