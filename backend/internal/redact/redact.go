// Package redact takes the server's file paths out of error messages that
// reach API clients: the layout of the server's disk is none of a client's
// business (and a path can carry a user name). The full error still goes to
// the server's log where it matters.
package redact

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
)

// absPath matches what looks like an absolute file path of two or more
// parts inside a message, starting a word (the text's start, after a
// blank, a quote, a bracket, = or :), so that a cell key (m/tree/c1) or a
// URL's path (http://host:8080/v1/models) is left as it is.
var absPath = regexp.MustCompile(`(^|[\s"'(\[=:])(?:/[^\s/:"'()\[\]]+){2,}/?`)

// Err is err with the path of an *fs.PathError or *os.LinkError dropped
// (errors.Is still sees the cause: fs.ErrNotExist, syscall.ENOSPC, …).
func Err(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return fmt.Errorf("%s: %w", le.Op, le.Err)
	}
	return err
}

// Message is err as a client may read it: Err's message, with anything
// else that looks like an absolute path (a storage library's own words)
// replaced by <path>.
func Message(err error) string { return Paths(Err(err).Error()) }

// Paths is s with what looks like an absolute path replaced by <path>: a
// line of a runner's output, say, that a client reads (the paths of the
// run's directory, its plan, the engine's files).
func Paths(s string) string { return absPath.ReplaceAllString(s, "${1}<path>") }
