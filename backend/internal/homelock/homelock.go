// Package homelock gives one process at a time a data home (serve's
// --home): Badger takes its history for one process, and a second serve on
// the same home would come up with its bench side failing on storage. The
// lock is an flock on <home>/metrics/home.lock, so the kernel releases it
// when its holder dies, kill -9 included; the file says who holds it, so
// the second process can name the first.
package homelock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Owner is what the lock file says of its holder.
type Owner struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`        // "serve", "bench run", "bench import"
	Addr    string    `json:"addr,omitempty"` // where a serve listens
	Since   time.Time `json:"since"`
}

// describe is the holder in a few words: "mlx-metrics serve (pid 1234,
// http://127.0.0.1:7878, since 14:02:11)".
func (o Owner) describe() string {
	if o.PID == 0 {
		return "another mlx-metrics process"
	}
	s := fmt.Sprintf("mlx-metrics %s (pid %d", o.Command, o.PID)
	if o.Addr != "" {
		s += ", http://" + o.Addr
	}
	if !o.Since.IsZero() {
		s += ", since " + o.Since.Local().Format("2006-01-02 15:04:05")
	}
	return s + ")"
}

// InUseError is Acquire's answer when another process holds the home.
type InUseError struct {
	Home  string
	Other Owner // what its lock file says; zero when unreadable
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("home %s is in use by %s; stop it or choose another home (--home)", e.Home, e.Holder())
}

// Holder names the process holding the home: "mlx-metrics serve (pid
// 1234, http://127.0.0.1:7878, since 2026-12-06 14:02:11)".
func (e *InUseError) Holder() string { return e.Other.describe() }

// Lock is a held home.
type Lock struct {
	f     *os.File
	owner Owner
}

// maxOwner bounds what is read of another holder's lock file.
const maxOwner = 4 << 10

// Acquire takes home for this process, as command (creating
// <home>/metrics), or returns an *InUseError naming the holder.
func Acquire(home, command string) (*Lock, error) {
	dir := filepath.Join(home, "metrics")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the home: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "home.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the home's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			var o Owner
			// The first value only: the holder may be mid-write, its new
			// record over a longer old one not yet cut.
			_ = json.NewDecoder(io.LimitReader(f, maxOwner)).Decode(&o)
			return nil, &InUseError{Home: home, Other: o}
		}
		return nil, fmt.Errorf("lock the home: %w", err)
	}
	l := &Lock{f: f, owner: Owner{PID: os.Getpid(), Command: command, Since: time.Now()}}
	if err := l.write(); err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

// SetAddr records where the holder listens, for the next process's error.
func (l *Lock) SetAddr(addr string) error {
	l.owner.Addr = addr
	return l.write()
}

func (l *Lock) write() error {
	b, _ := json.Marshal(l.owner)
	b = append(b, '\n')
	// Written over the old, then cut to length: a process reading in
	// between sees a whole holder, never an empty file.
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("write the home's lock: %w", err)
	}
	if err := l.f.Truncate(int64(len(b))); err != nil {
		return fmt.Errorf("write the home's lock: %w", err)
	}
	return nil
}

// Release gives the home back. The file stays: removing it could race a
// process that has just opened it.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor drops the flock
	l.f = nil
	return err
}
