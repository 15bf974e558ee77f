package loadgen

import "testing"

func TestKeep(t *testing.T) {
	tests := []struct {
		text, more string
		limit      int
		want       string
	}{
		{"ab", "cd", 8, "abcd"},
		{"ab", "cdef", 4, "abcd"},
		{"abcd", "ef", 4, "abcd"},
		{"a", "é€", 4, "aé"}, // never half a rune: € would need bytes 4 to 6
		{"", "€", 2, ""},
	}
	for _, tt := range tests {
		if got := keep(tt.text, tt.more, tt.limit); got != tt.want {
			t.Errorf("keep(%q, %q, %d) = %q, want %q", tt.text, tt.more, tt.limit, got, tt.want)
		}
	}
}
