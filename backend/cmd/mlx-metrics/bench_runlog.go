package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// runLogFile is where the runner keeps its own output, in the run
// directory beside the servers' logs.
const runLogFile = "runner.log"

// runLog passes the runner's output on to its console (serve's pipe, or a
// terminal) and keeps it in logs/runner.log: once serve is gone the pipe
// takes nothing, and what the run said still has a place.
type runLog struct {
	console io.Writer
	file    *os.File // nil when the file could not be made
}

// openRunLog opens dir's runner log for appending; without it the run
// goes on, its output to the console alone.
func openRunLog(dir string, env cliEnv) *runLog {
	l := &runLog{console: env.stdout}
	logs := filepath.Join(dir, "logs")
	f, err := os.OpenFile(filepath.Join(logs, runLogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if os.IsNotExist(err) && os.MkdirAll(logs, 0o755) == nil {
		f, err = os.OpenFile(filepath.Join(logs, runLogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "logs/%s: %v (the output goes to the console only)\n", runLogFile, pathCause(err))
		return l
	}
	l.file = f
	return l
}

// Write writes p to the file and the console; it fails only when both do,
// so a broken console does not stop the run's lines.
func (l *runLog) Write(p []byte) (int, error) {
	var ferr error = os.ErrClosed
	if l.file != nil {
		_, ferr = l.file.Write(p)
	}
	_, cerr := l.console.Write(p)
	if ferr != nil && cerr != nil {
		return 0, cerr
	}
	return len(p), nil
}

// close adds the error the command ends with (main prints it on stderr,
// which may be as broken as stdout) and closes the file.
func (l *runLog) close(err error) {
	if l.file == nil {
		return
	}
	if err != nil {
		fmt.Fprintf(l.file, "mlx-metrics bench run: %v\n", err)
	}
	l.file.Close()
}

// pathCause is err without the path the os package put in it.
func pathCause(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
