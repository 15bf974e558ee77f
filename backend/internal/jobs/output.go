package jobs

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
)

// Kinds of runner output line.
const (
	lineLog     = iota // anything else: kept in the job log
	lineCell           // "=== <cell key> ===": a cell starts
	lineProblem        // "  problem: <text>": a problem of the run
	linePhase          // "phase <name> (attempt N)": a phase of the cell starts
	lineStep           // "<what> i/n: <figures>": run i of the phase's n is done
)

var (
	phaseLine = regexp.MustCompile(`^phase ([a-z0-9-]+) \(attempt \d+\)$`)
	stepLine  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z ]* (\d+)/(\d+): `)
)

// step reads a lineStep's "i/n" as the share of the phase done.
func step(line string) (float64, bool) {
	m := stepLine.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	i, err1 := strconv.Atoi(m[1])
	n, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil || n <= 0 || i < 0 || i > n {
		return 0, false
	}
	return float64(i) / float64(n), true
}

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
	if m := phaseLine.FindStringSubmatch(line); m != nil {
		return linePhase, m[1]
	}
	if _, ok := step(line); ok {
		return lineStep, line
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
