//go:build !(js && wasm)

package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

// send makes req over net/http (native builds: tests and tools).
func send(ctx context.Context, req request) (status int, body []byte, err error) {
	var rd io.Reader
	if req.body != nil {
		rd = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, req.url, rd)
	if err != nil {
		return 0, nil, err
	}
	if req.body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Accept", "application/json")
	if req.token != "" {
		hr.Header.Set("Authorization", "Bearer "+req.token)
	}
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	return res.StatusCode, data, err
}
