package redact

import (
	"errors"
	"fmt"
	"net/url"
	"testing"
)

func TestURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://127.0.0.1:8000/metrics", "http://127.0.0.1:8000/metrics"},
		{"http://u:secret@host:9/events", "http://u:xxxxx@host:9/events"},
		{"http://host/events?token=secret&x=1", "http://host/events?…"},
		{"https://u:p@host/m?k=v", "https://u:xxxxx@host/m?…"},
		{"http://host/%zz", ""},
	}
	for _, tt := range tests {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestURLError(t *testing.T) {
	inner := errors.New("dial tcp 127.0.0.1:9: connect: connection refused")
	err := fmt.Errorf("polling: %w", &url.Error{Op: "Get", URL: "http://host/m?token=secret", Err: inner})
	if got := URLError(err); got != inner.Error() {
		t.Errorf("URLError = %q", got)
	}
	if got := URLError(inner); got != inner.Error() {
		t.Errorf("URLError of a plain error = %q", got)
	}
}
