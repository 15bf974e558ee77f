//go:build unix

package history

import "syscall"

// freeSpace is how many bytes an unprivileged writer may still use on the
// filesystem holding dir.
func freeSpace(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
