package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// envDefaults reads the environment twins of serve's flags as their
// defaults. A malformed value is kept and refused once the flags are parsed,
// as the same value given as a flag would be, rather than silently becoming
// the built-in default.
type envDefaults struct {
	errs []error
	read []string // the keys asked for, in order (the README's table is checked against them)
}

// envValue is key's value parsed, or def when key is unset or malformed
// (then noted in e).
func envValue[T any](e *envDefaults, key, want string, def T, parse func(string) (T, error)) T {
	e.read = append(e.read, key)
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s %q: not %s", key, v, want))
		return def
	}
	return x
}

// text is key's value, or def when key is unset: a string needs no
// parsing, and is read here so that every env twin is read one way.
func (e *envDefaults) text(key, def string) string {
	return envValue(e, key, "text", def, func(v string) (string, error) { return v, nil })
}

func (e *envDefaults) int(key string, def int) int {
	return envValue(e, key, "an integer", def, strconv.Atoi)
}

func (e *envDefaults) float(key string, def float64) float64 {
	return envValue(e, key, "a number", def, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) })
}

func (e *envDefaults) bool(key string, def bool) bool {
	return envValue(e, key, "true or false", def, strconv.ParseBool)
}

func (e *envDefaults) duration(key string, def time.Duration) time.Duration {
	return envValue(e, key, "a duration such as 70s or 2m", def, time.ParseDuration)
}

// err is every malformed value, nil when there is none.
func (e *envDefaults) err() error { return errors.Join(e.errs...) }

// envOr is key's value, or def when key is unset: the client commands'
// defaults (serve's flags read theirs through envDefaults).
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
