//go:build js && wasm

package api

import (
	"context"
	"errors"
	"syscall/js"
)

// send makes req with the browser's fetch, aborted when ctx ends.
func send(ctx context.Context, req request) (status int, body []byte, err error) {
	global := js.Global()
	if !global.Get("fetch").Truthy() {
		return 0, nil, errors.New("this browser has no fetch")
	}
	headers := global.Get("Object").New()
	headers.Set("Accept", "application/json")
	if req.token != "" {
		headers.Set("Authorization", "Bearer "+req.token)
	}
	init := global.Get("Object").New()
	init.Set("method", req.method)
	init.Set("credentials", "same-origin")
	if req.body != nil {
		headers.Set("Content-Type", "application/json")
		init.Set("body", string(req.body))
	}
	init.Set("headers", headers)
	abort := global.Get("AbortController").New()
	init.Set("signal", abort.Get("signal"))

	type result struct {
		status int
		body   []byte
		err    error
	}
	done := make(chan result, 1)
	var onText, onResponse, onFail js.Func
	onFail = js.FuncOf(func(_ js.Value, args []js.Value) any {
		msg := "fetch failed"
		if len(args) > 0 && args[0].Truthy() {
			msg = args[0].Call("toString").String()
		}
		done <- result{err: errors.New(msg)}
		return nil
	})
	onResponse = js.FuncOf(func(_ js.Value, args []js.Value) any {
		res := args[0]
		code := res.Get("status").Int()
		onText = js.FuncOf(func(_ js.Value, args []js.Value) any {
			text := args[0].String()
			if len(text) > maxBody {
				text = text[:maxBody]
			}
			done <- result{status: code, body: []byte(text)}
			return nil
		})
		res.Call("text").Call("then", onText, onFail)
		return nil
	})
	global.Call("fetch", req.url, init).Call("then", onResponse, onFail)
	defer func() {
		onResponse.Release()
		onFail.Release()
		if onText.Truthy() {
			onText.Release()
		}
	}()
	select {
	case r := <-done:
		return r.status, r.body, r.err
	case <-ctx.Done():
		abort.Call("abort")
		<-done // the promise settles (rejected) once aborted
		return 0, nil, ctx.Err()
	}
}
