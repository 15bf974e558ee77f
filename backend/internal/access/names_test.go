package access

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
)

func TestParseOrigins(t *testing.T) {
	tests := []struct {
		in      []string
		want    string
		wantErr bool
	}{
		{in: nil, want: ""},
		{in: []string{"http://localhost:3000/", " HTTPS://Host.Example "}, wantErr: true},
		{in: []string{"http://localhost:3000/", "https://Host.Example"}, want: "http://localhost:3000,https://host.example"},
		{in: []string{"*"}, want: "*"},
		{in: []string{"localhost:3000"}, wantErr: true},
		{in: []string{"http://host/path"}, wantErr: true},
		{in: []string{"ftp://host"}, wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseOrigins(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("%v: err = %v", tt.in, err)
			continue
		}
		if !tt.wantErr && strings.Join(got, ",") != tt.want {
			t.Errorf("%v: got %v, want %s", tt.in, got, tt.want)
		}
	}
}

// fakeResolver answers from a table; a name it does not hold waits for
// the look-up's context to end (a DNS server that does not answer).
type fakeResolver map[string][]string

func (f fakeResolver) LookupHost(ctx context.Context, host string) ([]string, error) {
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("a look-up without a deadline")
	}
	if addrs, ok := f[host]; ok {
		return addrs, nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// A listen address binds loopback only when its host is a loopback
// literal, localhost, or a name all of whose addresses are loopback: such
// a server keeps its Host check against DNS rebinding.
func TestIsLoopbackAddr(t *testing.T) {
	names := fakeResolver{
		"devbox":     {"127.0.1.1"},
		"dual.local": {"::1", "127.0.0.1"},
		"lan.local":  {"127.0.0.1", "192.168.1.2"},
		"public":     {"203.0.113.7"},
		"odd":        {"not an address"},
		"none":       {},
	}
	tests := []struct {
		addr string
		r    Resolver
		want bool
	}{
		{"127.0.0.1:7878", names, true}, {"127.1.2.3:7878", names, true}, {"[::1]:7878", names, true},
		{":7878", names, false}, {"0.0.0.0:7878", names, false}, {"[::]:7878", names, false}, {"192.168.1.2:7878", names, false},
		{"bad", names, false},
		{"localhost:7878", names, true}, {"LocalHost:7878", names, true},
		{"localhost:7878", net.DefaultResolver, true}, {"127.0.0.1:7878", net.DefaultResolver, true},
		{"devbox:7878", names, true}, {"dual.local:7878", names, true},
		// Listen binds one of a name's addresses: any may be the public one.
		{"lan.local:7878", names, false}, {"public:7878", names, false},
		{"odd:7878", names, false}, {"none:7878", names, false},
		// No answer within the look-up's bound: exposed, as said at start.
		{"silent:7878", names, false},
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range tests {
		ctx := context.Background()
		if tt.addr == "silent:7878" {
			ctx = gone // its look-up ends at once, as at its bound
		}
		if got := IsLoopbackAddr(ctx, tt.r, tt.addr); got != tt.want {
			t.Errorf("IsLoopbackAddr(%q) = %v, want %v", tt.addr, got, tt.want)
		}
	}
}
