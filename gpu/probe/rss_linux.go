package probe

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

var pageSize = int64(os.Getpagesize())

// GroupRSS is the resident memory of every process in process group pgid
// (a server and the workers it started), and their pids. It reads /proc.
func GroupRSS(pgid int) (int64, []int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	var total int64
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		group, rss, err := statOf(pid)
		if err != nil || group != pgid {
			continue // gone meanwhile, or another group
		}
		total += rss
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		return 0, nil, fmt.Errorf("no process in group %d", pgid)
	}
	return total, pids, nil
}

// statOf reads a process's group from /proc/<pid>/stat and its resident
// pages from field 24 of the same line.
func statOf(pid int) (pgrp int, rss int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name is in parentheses and may hold spaces: fields start
	// after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is state (field 3); pgrp is field 5, rss field 24.
	if len(f) < 22 {
		return 0, 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	pgrp, err = strconv.Atoi(f[2])
	if err != nil {
		return 0, 0, err
	}
	pages, err := strconv.ParseInt(f[21], 10, 64)
	if err != nil {
		return 0, 0, err
	}
	return pgrp, pages * pageSize, nil
}
