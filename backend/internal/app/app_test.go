package app

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// part records its Close in log, with the deadline it was given, and its
// Handlers call in asked.
type part struct {
	name  string
	err   error
	log   *[]string
	seen  *[]time.Time // the deadline each Close was given
	asked *[]string
	onEnd func(ctx context.Context) error
}

func (p *part) Handlers(*Handlers) {
	if p.asked != nil {
		*p.asked = append(*p.asked, p.name)
	}
}

func (p *part) Close(ctx context.Context) error {
	*p.log = append(*p.log, p.name)
	d, _ := ctx.Deadline()
	*p.seen = append(*p.seen, d)
	if p.onEnd != nil {
		if err := p.onEnd(ctx); err != nil {
			return err
		}
	}
	return p.err
}

func TestClose(t *testing.T) {
	errB, errD := errors.New("b failed"), errors.New("d failed")
	deadline := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		parts []string         // added in this order
		errs  map[string]error // what a part's Close returns
		// first: the parts the one named "server" closes first (CloseFirst),
		// as the HTTP server's Close does with the parts that hold streams open.
		first   []string
		order   []string // the Close calls, in order
		errWant []error
	}{
		{name: "none"},
		{name: "reverse of start", parts: []string{"a", "b", "c"}, order: []string{"c", "b", "a"}},
		{name: "errors joined, every part still closed", parts: []string{"a", "b", "c", "d"},
			errs: map[string]error{"b": errB, "d": errD}, order: []string{"d", "c", "b", "a"}, errWant: []error{errB, errD}},
		{name: "closed first, then skipped", parts: []string{"live", "bench", "export", "server", "engine"},
			first: []string{"live", "bench"}, order: []string{"engine", "server", "live", "bench", "export"}},
		{name: "an error of a part closed first", parts: []string{"a", "b", "server"},
			errs: map[string]error{"b": errB}, first: []string{"b"}, order: []string{"server", "b", "a"}, errWant: []error{errB}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				a     App
				log   []string
				seen  []time.Time
				asked []string
				parts = map[string]*part{}
			)
			for _, name := range tt.parts {
				p := &part{name: name, err: tt.errs[name], log: &log, seen: &seen, asked: &asked}
				if name == "server" {
					p.onEnd = func(ctx context.Context) error {
						var ps []Part
						for _, n := range tt.first {
							ps = append(ps, parts[n])
						}
						return a.CloseFirst(ctx, ps...)
					}
				}
				parts[name] = p
				a.Add(p)
			}
			a.Handlers()
			if !slices.Equal(asked, tt.parts) {
				t.Errorf("handlers asked of %v, want the start order %v", asked, tt.parts)
			}

			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			err := a.Close(ctx)
			if !slices.Equal(log, tt.order) {
				t.Errorf("closed %v, want %v", log, tt.order)
			}
			for _, want := range tt.errWant {
				if !errors.Is(err, want) {
					t.Errorf("Close = %v, want it to hold %v", err, want)
				}
			}
			if tt.errWant == nil && err != nil {
				t.Errorf("Close = %v, want nil", err)
			}
			for i, d := range seen {
				if !d.Equal(deadline) {
					t.Errorf("%s closed with deadline %v, want %v", log[i], d, deadline)
				}
			}

			// Closing again does nothing; so does closing first a part
			// already closed.
			if err := a.Close(ctx); err != nil {
				t.Errorf("second Close = %v", err)
			}
			for _, p := range parts {
				if err := a.CloseFirst(ctx, p); err != nil {
					t.Errorf("CloseFirst(%s) after Close = %v", p.name, err)
				}
			}
			if !slices.Equal(log, tt.order) {
				t.Errorf("after closing again: closed %v, want %v", log, tt.order)
			}
		})
	}
}

// A part added after Close is closed by the next Close, and only it.
func TestCloseAfterAdd(t *testing.T) {
	var (
		a    App
		log  []string
		seen []time.Time
	)
	a.Add(&part{name: "a", log: &log, seen: &seen})
	a.Close(context.Background())
	a.Add(&part{name: "b", log: &log, seen: &seen})
	a.CloseFirst(context.Background(), &part{name: "stranger", log: &log, seen: &seen}) // not a part of a
	a.Close(context.Background())
	if want := []string{"a", "b"}; !slices.Equal(log, want) {
		t.Errorf("closed %v, want %v", log, want)
	}
}
