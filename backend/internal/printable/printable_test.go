package printable

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"mlx-community/Qwen3-4B-4bit", 256, "mlx-community/Qwen3-4B-4bit"},
		{"a\nb\x1b[2J\x00", 256, "a\uFFFDb\uFFFD[2J\uFFFD"},
		{"c1\u0085 and \u202eexe.live", 256, "c1\uFFFD and \uFFFDexe.live"},
		{"bad \xff\xfe", 256, "bad \uFFFD"},
		{long, 256, long[:256]},
		{"a" + long, 256, "a" + long[:254]},
		{"", 10, ""},
	}
	for _, tt := range tests {
		got := Cut(tt.in, tt.n)
		if got != tt.want || len(got) > tt.n || !utf8.ValidString(got) {
			t.Errorf("Cut(%.20q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
