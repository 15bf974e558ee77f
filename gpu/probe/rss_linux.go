package probe

import (
	"fmt"

	"github.com/prometheus/procfs"
)

// GroupRSS is the resident memory of every process in process group pgid
// (a server and the workers it started), and their pids. It reads /proc.
func GroupRSS(pgid int) (int64, []int, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, nil, err
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return 0, nil, err
	}
	var total int64
	var pids []int
	for _, p := range procs {
		s, err := p.Stat()
		if err != nil || s.PGRP != pgid {
			continue // gone meanwhile, or another group
		}
		total += int64(s.ResidentMemory())
		pids = append(pids, p.PID)
	}
	if len(pids) == 0 {
		return 0, nil, fmt.Errorf("no process in group %d", pgid)
	}
	return total, pids, nil
}
