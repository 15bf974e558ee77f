package jobs

import (
	"bytes"
	"strings"
)

// Kinds of runner output line.
const (
	lineLog     = iota // anything else: kept in the job log
	lineCell           // "=== <cell key> ===": a cell starts
	lineProblem        // "  problem: <text>": a problem of the run
)

// parseLine reads one line of the runner's stdout: a cell marker, a problem,
// or log. It returns the cell key or the problem's text.
func parseLine(line string) (kind int, text string) {
	line = strings.TrimRight(line, "\r")
	if rest, ok := strings.CutPrefix(line, "=== "); ok {
		if key, ok := strings.CutSuffix(rest, " ==="); ok && strings.TrimSpace(key) != "" {
			return lineCell, strings.TrimSpace(key)
		}
	}
	if rest, ok := strings.CutPrefix(strings.TrimLeft(line, " \t"), "problem:"); ok && line != strings.TrimLeft(line, " \t") {
		return lineProblem, strings.TrimSpace(rest)
	}
	return lineLog, line
}

// lineWriter splits what a process writes into lines for f; a line longer
// than max is passed on in pieces so a runaway writer cannot grow memory.
type lineWriter struct {
	f   func(string)
	buf []byte
	max int
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			for len(w.buf) >= w.max {
				w.f(string(w.buf[:w.max]))
				w.buf = append(w.buf[:0], w.buf[w.max:]...)
			}
			break
		}
		w.buf = append(w.buf, p[:i]...)
		w.f(string(w.buf))
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// flush passes on a last line that had no newline.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.f(string(w.buf))
		w.buf = w.buf[:0]
	}
}
