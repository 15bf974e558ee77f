// Package cliflag parses a command's flags the way every mlx-metrics
// command reports a mistake: one line naming it, never the whole usage,
// which only -h prints.
package cliflag

import (
	"errors"
	"flag"
	"io"
	"strings"
)

// Parse parses args into fs. With -h or -help it prints fs.Usage and
// returns flag.ErrHelp; any other mistake (an unknown flag, a bad value, a
// flag without its value) is returned, printing nothing, so the caller
// says it in one line and points at -h.
func Parse(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if errors.Is(err, flag.ErrHelp) {
		if usage != nil {
			usage()
		} else {
			fs.PrintDefaults()
		}
	}
	return err
}

// Unknown is the name of the flag a Parse error says is not defined ("port"
// for "flag provided but not defined: -port"), so that a command can say
// which of its own flags does that job.
func Unknown(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok || name == "" {
		return "", false
	}
	return name, true
}
