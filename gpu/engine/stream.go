package engine

import (
	"context"
	"sync"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// Token is one generated token and when the scheduler produced it.
type Token struct {
	Text string
	At   time.Time
}

// Result is how a request ended. Counts are the engine's own, as usage
// reports them.
type Result struct {
	Finish             events.FinishReason
	PromptTokens       int
	CachedPromptTokens int
	CompletionTokens   int
	Err                error
}

// Stream delivers one request's tokens. The scheduler never blocks on it: it
// appends to a buffer and nudges the reader.
type Stream struct {
	ID uint64

	mu      sync.Mutex
	pending []Token
	result  *Result
	notify  chan struct{}
	release func()
}

func newStream(id uint64) *Stream {
	return &Stream{ID: id, notify: make(chan struct{}, 1)}
}

func (s *Stream) push(t Token) {
	s.mu.Lock()
	s.pending = append(s.pending, t)
	s.mu.Unlock()
	s.nudge()
}

func (s *Stream) finish(r Result) {
	s.mu.Lock()
	if s.result == nil {
		s.result = &r
	}
	s.mu.Unlock()
	s.nudge()
}

func (s *Stream) nudge() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Next waits for tokens or the end. It returns the tokens produced since the
// last call and, once the request has ended, its Result (with the last
// tokens, if any). It returns ctx's error when ctx ends first.
func (s *Stream) Next(ctx context.Context) ([]Token, *Result, error) {
	for {
		s.mu.Lock()
		toks, res := s.pending, s.result
		s.pending = nil
		s.mu.Unlock()
		if len(toks) > 0 || res != nil {
			if res != nil && s.release != nil {
				s.release()
			}
			return toks, res, nil
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}
