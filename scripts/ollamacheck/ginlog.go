package main

import (
	"bufio"
	"io"
	"regexp"
	"time"
)

// ginLine is one request ollama's HTTP server logged (gin's access log):
// its latency, from the request reaching the handler to its last byte
// written, for the completions endpoints: OpenAI's, or the native ones
// scripts/ollamafront sends them to.
var ginLine = regexp.MustCompile(`^\[GIN\] [^|]+\| (\d{3}) \|\s*(\S+) \|[^|]+\| POST\s+"(/v1/(?:chat/)?completions|/api/(?:generate|chat))"`)

type logged struct {
	status   string
	latency  time.Duration
	endpoint string
}

// readGIN reads the completions requests ollama logged, in order.
func readGIN(r io.Reader) ([]logged, error) {
	var out []logged
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := ginLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		d, err := time.ParseDuration(m[2])
		if err != nil || d < 0 {
			continue
		}
		out = append(out, logged{m[1], d, m[3]})
	}
	return out, sc.Err()
}
