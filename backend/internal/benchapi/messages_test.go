package benchapi

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/backend/internal/profiles"
)

// TestMessagesBounded: whatever a client sends, the answer is a 4xx whose
// message neither echoes more than a bounded part of the input nor names a
// path of the server.
func TestMessagesBounded(t *testing.T) {
	ta := newTestAPI(t, 0)
	serverPath := ta.api.profiles.Path()
	os.WriteFile(ta.api.profiles.FileFor("invalid"), []byte(`{"scope":"sideways","cells":[]}`), 0o644)
	long := strings.Repeat("a", 251)
	huge := strings.Repeat("b", 60000)     // under the 64 KiB a bench start's body may be
	longQuery := strings.Repeat("q", 3000) // a URL within the server's header buffer
	tests := []struct {
		name, method, path, body string
		status                   int
	}{
		{"long profile", "POST", "/bench", fmt.Sprintf(`{"profile":%q}`, long), 400},
		{"huge profile", "POST", "/bench", fmt.Sprintf(`{"profile":%q}`, huge), 400},
		{"missing profile", "POST", "/bench", `{"profile":"nope"}`, 400},
		{"no profile", "POST", "/bench", `{}`, 400},
		{"bad name", "POST", "/bench", `{"profile":"../x"}`, 400},
		{"invalid plan", "POST", "/bench", `{"profile":"invalid"}`, 400},
		{"unknown field", "POST", "/bench", fmt.Sprintf(`{%q:1}`, huge), 400},
		{"huge status", "GET", "/bench?status=" + longQuery, "", 400},
		{"huge limit", "GET", "/history?format=csv&limit=" + longQuery, "", 400},
		{"huge format", "GET", "/history?format=" + longQuery, "", 400},
		{"huge job", "GET", "/bench/" + strings.Repeat("c", 2000), "", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ta.do(tt.method, tt.path, tt.body)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %.300s", r.status, tt.status, r.body)
			}
			msg := r.apiError(t).Message
			if strings.Contains(msg, serverPath) || len(msg) > 600 {
				t.Fatalf("message names the server's path or echoes too much (%d bytes): %.700s", len(msg), msg)
			}
			if tt.name == "long profile" && !strings.Contains(msg, fmt.Sprintf("longer than %d", profiles.MaxNameLen)) {
				t.Fatalf("message = %s", msg)
			}
		})
	}
}
