// Package plural writes counts in English: "1 run", "2 runs". It is the one
// helper the CLI, the log lines and the panel share, so a count never reads
// "1 runs" in one place and right in another.
package plural

import "strconv"

// Count is n followed by one or many: Count(1, "run", "runs") is "1 run",
// Count(0, "run", "runs") is "0 runs".
func Count[N ~int | ~int64 | ~uint64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	if n < 0 {
		return strconv.FormatInt(int64(n), 10) + " " + many
	}
	return strconv.FormatUint(uint64(n), 10) + " " + many
}

// Word is one or many as n asks, for a count written some other way (with
// thousands separators): Word(1, "run", "runs") is "run".
func Word[N ~int | ~int64 | ~uint64](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
