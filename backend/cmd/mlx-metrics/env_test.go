package main

import (
	"strings"
	"testing"
	"time"
)

func TestEnvDefaults(t *testing.T) {
	const key = "MLX_METRICS_TEST_ENV"
	tests := []struct {
		name, value string
		read        func(*envDefaults) any
		want        any
		err         string // empty: no error
	}{
		{"int unset keeps the default", "", func(e *envDefaults) any { return e.int(key, 7) }, 7, ""},
		{"int", "42", func(e *envDefaults) any { return e.int(key, 7) }, 42, ""},
		{"int malformed", "4x", func(e *envDefaults) any { return e.int(key, 7) }, 7, `MLX_METRICS_TEST_ENV "4x": not an integer`},
		{"float", "2.5", func(e *envDefaults) any { return e.float(key, 1) }, 2.5, ""},
		{"float malformed", "fast", func(e *envDefaults) any { return e.float(key, 1) }, 1.0, "not a number"},
		{"bool", "true", func(e *envDefaults) any { return e.bool(key, false) }, true, ""},
		{"bool malformed", "yes please", func(e *envDefaults) any { return e.bool(key, false) }, false, "not true or false"},
		{"duration", "2m", func(e *envDefaults) any { return e.duration(key, time.Second) }, 2 * time.Minute, ""},
		{"text unset keeps the default", "", func(e *envDefaults) any { return e.text(key, "d") }, "d", ""},
		{"text", "s3cret", func(e *envDefaults) any { return e.text(key, "d") }, "s3cret", ""},
		{"duration malformed", "30", func(e *envDefaults) any { return e.duration(key, time.Second) }, time.Second, "not a duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(key, tt.value)
			var e envDefaults
			if got := tt.read(&e); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			err := e.err()
			if tt.err == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("error %v, want one containing %q", err, tt.err)
			}
		})
	}
}
