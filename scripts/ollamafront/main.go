// Command ollamafront serves ollama's OpenAI-compatible completions in
// front of a running ollama, with ollama's own OpenAI layer (its openai
// package's middlewares, the code ollama runs in its own process) over
// ollama's native API, and writes ollama's timing of each request: its
// native API reports prompt_eval_duration and eval_duration, which its
// OpenAI layer drops. A benchmark pointed at the front sends exactly what
// it would send to ollama's /v1 and reads exactly what ollama's /v1
// writes, and each of its requests can then be held to ollama's own
// timing of that same request (scripts/ollamacheck -timings).
//
// It binds a free loopback port and prints its root URL on the first line
// of stdout. Every other path is passed to ollama as it is.
//
//	ollamafront -upstream http://127.0.0.1:11434 -timings FILE
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/openai"
)

// Timing is one request's line in the timings file: what the front saw
// and what ollama's native API said of the request (durations in ns, as
// ollama writes them).
type Timing struct {
	Endpoint string    `json:"endpoint"` // the OpenAI path asked for
	Received time.Time `json:"received"`
	Status   int       `json:"status"`
	Done     string    `json:"done_reason,omitempty"`
	api.Metrics
}

// timings appends one JSON line per finished request, in the order the
// requests finished.
type timings struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (t *timings) add(x Timing) {
	b, _ := json.Marshal(x)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.w.Write(append(b, '\n'))
	t.w.Flush()
}

func main() {
	upstream := flag.String("upstream", "http://127.0.0.1:11434", "ollama's root `URL`")
	out := flag.String("timings", "", "`FILE` to write each completions request's timing to, one JSON line each")
	flag.Parse()
	up, err := url.Parse(*upstream)
	if err != nil || *out == "" {
		fmt.Fprintln(os.Stderr, "ollamafront: want -upstream URL and -timings FILE")
		os.Exit(2)
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ollamafront:", err)
		os.Exit(1)
	}
	t := &timings{w: bufio.NewWriter(f)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "ollamafront:", err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	os.Stdout.Sync()
	if err := http.Serve(ln, handler(up, t)); err != nil {
		fmt.Fprintln(os.Stderr, "ollamafront:", err)
		os.Exit(1)
	}
}

func handler(up *url.URL, t *timings) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.POST("/v1/chat/completions", openai.ChatMiddleware(), native(up, "/api/chat", "/v1/chat/completions", t))
	r.POST("/v1/completions", openai.CompletionsMiddleware(), native(up, "/api/generate", "/v1/completions", t))
	r.NoRoute(gin.WrapH(httputil.NewSingleHostReverseProxy(up)))
	return r
}

// native sends the body ollama's middleware wrote to ollama's native
// endpoint and hands each line of its answer to the middleware's writer,
// as ollama's own handler does (one JSON object a write, flushed), keeping
// the last line's timing.
func native(up *url.URL, path, endpoint string, t *timings) gin.HandlerFunc {
	return func(c *gin.Context) {
		x := Timing{Endpoint: endpoint, Received: time.Now()}
		req, err := http.NewRequestWithContext(c.Request.Context(), http.MethodPost, up.JoinPath(path).String(), c.Request.Body)
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			var resp *http.Response
			if resp, err = http.DefaultClient.Do(req); err == nil {
				defer resp.Body.Close()
				x.Status = relay(c, resp, &x)
			}
		}
		if err != nil {
			x.Status = http.StatusBadGateway
			c.Status(x.Status)
			c.Writer.Write([]byte(`{"error":"ollama did not answer"}`))
		}
		t.add(x)
	}
}

func relay(c *gin.Context, resp *http.Response, x *Timing) int {
	c.Status(resp.StatusCode)
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			var last struct {
				Done       bool   `json:"done"`
				DoneReason string `json:"done_reason"`
				api.Metrics
			}
			if json.Unmarshal(line, &last) == nil && last.Done {
				x.Metrics, x.Done = last.Metrics, last.DoneReason
			}
			if _, werr := c.Writer.Write(line); werr != nil {
				return resp.StatusCode
			}
			c.Writer.Flush()
		}
		if err == io.EOF || err != nil {
			return resp.StatusCode
		}
	}
}
