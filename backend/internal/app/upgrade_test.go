package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
)

// TestOpenBenchUpgradesTheOriginal: a home the original module wrote (one
// <id>.json per run in metrics/history, its BenchHistoryEntry shape; see
// history/upgrade_test.go) starts with its runs in history, and /healthz
// says how many were imported.
func TestOpenBenchUpgradesTheOriginal(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "metrics", "history")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const id = "2025-03-01T10-00-00-000Z-smoke"
	run := `{
 "id": "` + id + `",
 "profile": "smoke",
 "scope": "scoped",
 "startedAt": "2025-03-01T10:00:00.000Z",
 "finishedAt": "2025-03-01T10:05:00.000Z",
 "durationMs": 300000,
 "complete": false,
 "exitCode": 1,
 "problems": ["cpm5/default/candidate: decode unstable"],
 "machine": null,
 "runDirectory": "/Users/x/.mlx-bun/metrics/bench/runs/` + id + `",
 "cells": []
}`
	for name, data := range map[string]string{id + ".json": run, "broken.json": "{"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := OpenBench(home, "no GPU found", benchConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	if b.degraded != "" {
		t.Fatalf("degraded: %s", b.degraded)
	}
	entries, _, err := b.hist.List(10)
	if err != nil || len(entries) != 1 || entries[0].ID != id || entries[0].ExitCode != 1 {
		t.Fatalf("history %+v, %v", entries, err)
	}
	h := b.health().(map[string]any)
	ups, ok := h["historyUpgrade"].([]history.Upgrade)
	if !ok || len(ups) != 1 || ups[0].Imported != 1 || ups[0].Files != 2 || len(ups[0].Skipped) != 1 {
		t.Errorf("healthz historyUpgrade = %#v", h["historyUpgrade"])
	}
}
