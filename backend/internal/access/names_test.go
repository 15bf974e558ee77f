package access

import (
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
