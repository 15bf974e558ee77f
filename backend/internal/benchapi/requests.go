package benchapi

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// The load phase's per-request records: GET /bench/:id/requests/:file,
// where file is a load point's requestsFile without its "requests/"
// (docs/api.md). JSON pages of records (?cursor, ?limit), or with
// ?format=csv the point's requests as CSV. The files are the runner's,
// written line by line: a line a crash cut short, or one that is not a
// record, is skipped and counted, never the page's end.

// requestsFileName is what the runner names a point's file
// (gpu/runner/load.go): nothing else under the run directory is served.
var requestsFileName = regexp.MustCompile(`^[0-9]{2,}-[A-Za-z0-9._-]{1,200}-p[0-9]{2,}-r[0-9]+\.ndjson$`)

// Bounds of a page of records: a record holds its gaps between tokens,
// so one of a long output is large.
const (
	defaultRequestsLimit = 200
	maxRequestsLimit     = 5000
	maxRequestsPageBytes = 8 << 20
	maxRecordBytes       = 32 << 20
)

// RequestsPage is GET /bench/:id/requests/:file's JSON body.
type RequestsPage struct {
	Records []json.RawMessage `json:"records"`
	// Next is the cursor of the page after, null at the end.
	Next *int64 `json:"next"`
	// Skipped counts the lines of this page's range that were not records.
	Skipped int   `json:"skipped"`
	Size    int64 `json:"size"` // the file's bytes
}

func (a *API) jobRequests(c *fiber.Ctx) error {
	id, name := c.Params("id"), c.Params("file")
	if !requestsFileName.MatchString(name) {
		return server.Error(c, fiber.StatusBadRequest, fmt.Sprintf("%q is not a load point's requests file (a requestsFile of the run's load points, without requests/)", capEcho(name)))
	}
	dir, err := a.jobs.Dir(id)
	if err != nil {
		return a.jobError(c, err)
	}
	f, err := os.Open(filepath.Join(dir, "requests", name))
	if errors.Is(err, os.ErrNotExist) {
		return server.Error(c, fiber.StatusNotFound, fmt.Sprintf("job %s has no requests file %s", capEcho(id), name))
	}
	if err != nil {
		return a.storageError(c, "read the requests of job "+id, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return a.storageError(c, "read the requests of job "+id, err)
	}
	switch format := c.Query("format", "json"); format {
	case "json":
		return a.requestsPage(c, f, st.Size())
	case "csv":
		return a.requestsCSV(c, f, strings.TrimSuffix(name, ".ndjson"))
	default:
		return server.Error(c, fiber.StatusBadRequest, fmt.Sprintf("format %q is not json or csv", capEcho(format)))
	}
}

func (a *API) requestsPage(c *fiber.Ctx, f *os.File, size int64) error {
	cursor, err := strconv.ParseInt(c.Query("cursor", "0"), 10, 64)
	if err != nil || cursor < 0 || cursor > size {
		return server.Error(c, fiber.StatusBadRequest, fmt.Sprintf("cursor %q: want a byte offset from a page's next, 0 to %d", capEcho(c.Query("cursor")), size))
	}
	limit, err := parseLimit(c.Query("limit"), defaultRequestsLimit, maxRequestsLimit)
	if err != nil {
		return server.Error(c, fiber.StatusBadRequest, err.Error())
	}
	if _, err := f.Seek(cursor, io.SeekStart); err != nil {
		return a.storageError(c, "read the requests", err)
	}
	page := RequestsPage{Records: []json.RawMessage{}, Size: size}
	br := bufio.NewReaderSize(f, 64<<10)
	at, bytesOut := cursor, 0
	for len(page.Records) < limit && bytesOut < maxRequestsPageBytes {
		line, n, err := readLine(br, maxRecordBytes)
		if n == 0 {
			break // the end
		}
		at += int64(n)
		if isRecord(line) {
			rec := bytes.TrimSpace(line)
			page.Records = append(page.Records, rec)
			bytesOut += len(rec)
		} else {
			page.Skipped++
		}
		if err != nil {
			break
		}
	}
	if at < size {
		page.Next = &at
	}
	return c.JSON(page)
}

// readLine reads a line with its '\n' (none at the end of a file cut
// short); n is the bytes consumed. A line over max is consumed whole and
// given back as nil, to be counted as skipped.
func readLine(br *bufio.Reader, max int) (line []byte, n int, err error) {
	over := false
	for {
		chunk, err := br.ReadSlice('\n')
		n += len(chunk)
		if over = over || n > max; !over {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over {
			line = nil
		}
		return line, n, err
	}
}

// isRecord: a whole line holding a JSON object.
func isRecord(line []byte) bool {
	rec := bytes.TrimSpace(line)
	return len(line) > 0 && line[len(line)-1] == '\n' && len(rec) > 0 && rec[0] == '{' && json.Valid(rec)
}

// requestsCSVHeader: a record's fields, its gaps between tokens as their
// count, mean and largest.
var requestsCSVHeader = []string{"i", "warmup", "scheduledMs", "slotMs", "sentMs", "ttftMs", "tpotMs", "e2elMs",
	"promptTokens", "outputTokens", "maxTokens", "finish", "error", "itlCount", "itlMeanMs", "itlMaxMs"}

func (a *API) requestsCSV(c *fiber.Ctx, f *os.File, name string) error {
	w := csv.NewWriter(c.Response().BodyWriter())
	_ = w.Write(requestsCSVHeader)
	br := bufio.NewReaderSize(f, 64<<10)
	skipped, truncated := 0, false
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for {
		line, n, err := readLine(br, maxRecordBytes)
		if n > 0 {
			var r bench.RequestRecord
			if !isRecord(line) || json.Unmarshal(line, &r) != nil {
				skipped++
			} else {
				var sum, top float64
				for _, g := range r.ITLMs {
					sum += g
					top = max(top, g)
				}
				mean := 0.0
				if len(r.ITLMs) > 0 {
					mean = sum / float64(len(r.ITLMs))
				}
				_ = w.Write([]string{strconv.Itoa(r.Index), strconv.FormatBool(r.Warmup), num(r.ScheduledMs), num(r.SlotMs), num(r.SentMs),
					num(r.TTFTMs), num(r.TPOTMs), num(r.E2ELMs), strconv.FormatInt(r.PromptTokens, 10), strconv.FormatInt(r.OutputTokens, 10),
					strconv.Itoa(r.MaxTokens), history.CSVText(r.Finish), history.CSVText(r.Error),
					strconv.Itoa(len(r.ITLMs)), num(mean), num(top)})
			}
		}
		if err != nil {
			break
		}
		if len(c.Response().Body()) > maxCSVBytes {
			truncated = true
			break
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		c.Response().ResetBody()
		return a.storageError(c, "write the requests CSV", err)
	}
	if truncated {
		c.Set(HeaderTruncated, "true")
	}
	c.Set(HeaderUnreadable, strconv.Itoa(skipped))
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+name+`.csv"`)
	return nil
}
