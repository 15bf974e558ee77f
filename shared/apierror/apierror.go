// Package apierror is the error body every route answers with:
// {"error":{"message":"…","type":"…"}}, in the style of OpenAI-compatible
// servers, so clients of those parse it unchanged.
package apierror

// Types of error.
const (
	TypeInvalidRequest = "invalid_request_error" // every 4xx
	TypeServer         = "server_error"          // every 5xx but the one below
	// TypeStorageFull is a 503 for want of disk space on the server: the
	// request may succeed once space is freed.
	TypeStorageFull = "storage_full_error"
)

// Body is the JSON error response.
type Body struct {
	Error Detail `json:"error"`
}

// Detail says what went wrong, for a person to read.
type Detail struct {
	Message string `json:"message"`
	Type    string `json:"type"`
}

// New builds the body for an HTTP status and message.
func New(status int, message string) Body {
	t := TypeInvalidRequest
	if status >= 500 {
		t = TypeServer
	}
	return Body{Error: Detail{Message: message, Type: t}}
}
