package redact

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

func TestMessage(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{errors.New("no space left on device"), "no space left on device"},
		{&fs.PathError{Op: "open", Path: "/home/u/.mlx-metrics/metrics/x", Err: syscall.ENOSPC}, "open: no space left on device"},
		{fmt.Errorf("seed: %w", &os.LinkError{Op: "link", Old: "/a/b", New: "/a/c", Err: fs.ErrExist}), "link: file already exists"},
		{errors.New("open /home/u/.mlx-metrics/metrics/history/000001.vlog: no space left on device"), "open <path>: no space left on device"},
		{errors.New(`While opening memtable: "/a/b/c.mem"`), `While opening memtable: "<path>"`},
		{errors.New("cells/0 and/or a/b"), "cells/0 and/or a/b"},
		// A path starts a word: a cell key or a URL's path is not one.
		{errors.New("m/tree/c1: GET http://127.0.0.1:8080/v1/models: 503"), "m/tree/c1: GET http://127.0.0.1:8080/v1/models: 503"},
		{errors.New("run x finished (/home/u/runs/x), report:/home/u/runs/x/report.md"), "run x finished (<path>), report:<path>"},
		{errors.New("started [/opt/bin/python -m mlx_lm.server --model=/models/q/4bit]"), "started [<path> -m mlx_lm.server --model=<path>]"},
		{errors.New("/a/b /c/d\t'/e/f'"), "<path> <path>\t'<path>'"},
	}
	for _, tt := range tests {
		if got := Message(tt.err); got != tt.want {
			t.Errorf("Message(%q) = %q, want %q", tt.err, got, tt.want)
		}
	}
	if !errors.Is(Err(&fs.PathError{Op: "open", Path: "/x/y", Err: syscall.ENOSPC}), syscall.ENOSPC) {
		t.Error("Err hides the cause")
	}
}
