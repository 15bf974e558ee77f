//go:build !linux

package probe

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// GroupRSS is the resident memory of the process group's leader (pid ==
// pgid) as ps reports it; without /proc the group's other members are not
// counted.
func GroupRSS(pgid int) (int64, []int, error) {
	out, err := exec.Command("ps", "-o", "rss=", "-p", strconv.Itoa(pgid)).Output()
	if err != nil {
		return 0, nil, fmt.Errorf("ps: %v", err)
	}
	kb, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("ps: unreadable rss %q", out)
	}
	return kb << 10, []int{pgid}, nil
}
