package ui

import (
	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// unreached is the first event source s says the backend does not reach,
// or nil.
func unreached(s *snapshot.Snapshot) *snapshot.Source {
	if s == nil {
		return nil
	}
	for i := range s.Sources {
		if s.Sources[i].State == snapshot.SourceUnreached {
			return &s.Sources[i]
		}
	}
	return nil
}

// unreachedDetail says the backend is live and which host it cannot reach,
// since when and why: the host alone, as the snapshot carries it.
func unreachedDetail(src *snapshot.Source) string {
	d := "backend live; cannot reach the event source " + src.Host + " since " + format.Clock(src.Since)
	if src.Error != "" {
		d += " (" + src.Error + ")"
	}
	return d + ", " + plural.Count(src.FailedAttempts, "failed attempt", "failed attempts") + "; retrying"
}
