package cliflag

import (
	"bytes"
	"errors"
	"flag"
	"testing"
)

func TestUnknown(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.String("addr", "", "")
	tests := []struct {
		args []string
		name string // "" for none
	}{
		{[]string{"--port", "80"}, "port"},
		{[]string{"-host=x"}, "host"},
		{[]string{"--addr"}, ""},
		{[]string{"--addr", "x"}, ""},
	}
	for _, tt := range tests {
		name, ok := Unknown(Parse(fs, tt.args))
		if name != tt.name || ok != (tt.name != "") {
			t.Errorf("Unknown(Parse(%q)) = %q, %v; want %q", tt.args, name, ok, tt.name)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		args     []string
		wantErr  string // "" for none
		wantHelp bool   // the usage printed
	}{
		{args: []string{"--plan", "p.json"}},
		{args: []string{"--bogus"}, wantErr: "flag provided but not defined: -bogus"},
		{args: []string{"--plan"}, wantErr: "flag needs an argument: -plan"},
		{args: []string{"--n", "x"}, wantErr: `invalid value "x" for flag -n: parse error`},
		{args: []string{"-h"}, wantErr: flag.ErrHelp.Error(), wantHelp: true},
		{args: []string{"--help"}, wantErr: flag.ErrHelp.Error(), wantHelp: true},
	}
	for _, tt := range tests {
		t.Run(tt.args[0], func(t *testing.T) {
			var out bytes.Buffer
			fs := flag.NewFlagSet("bench run", flag.ContinueOnError)
			fs.SetOutput(&out)
			fs.String("plan", "", "plan `FILE`")
			fs.Int("n", 0, "a count")
			fs.Usage = func() { out.WriteString("usage: bench run\n") }
			err := Parse(fs, tt.args)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if got := out.String() == "usage: bench run\n"; got != tt.wantHelp {
				t.Fatalf("printed %q, want the usage: %v", out.String(), tt.wantHelp)
			}
			if tt.wantHelp && !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("err = %v, want flag.ErrHelp", err)
			}
			if fs.Output() != &out {
				t.Fatal("the flag set's output was not given back")
			}
		})
	}
}
