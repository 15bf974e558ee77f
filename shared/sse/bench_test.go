package sse

import (
	"testing"
	"time"
)

// tokenEvent is one token chunk as vLLM streams it.
var tokenEvent = []byte(`data: {"id":"cmpl-1","object":"text_completion","created":1764690000,"model":"m","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":null}]}` + "\n\n")

// BenchmarkDecoderFields is the cost of the proxy's meter reading one
// token event's fields, fed whole. It must not allocate.
func BenchmarkDecoderFields(b *testing.B) {
	d := NewDecoder(Options{})
	at := time.Now()
	b.SetBytes(int64(len(tokenEvent)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		d.Feed(tokenEvent, at)
		for {
			f, err := d.NextField()
			if err == ErrNeedMore {
				break
			}
			n += len(f.Value)
		}
	}
	if n == 0 {
		b.Fatal("no data")
	}
}

// BenchmarkReaderEvents is the cost of reading one token event through a
// Reader.
func BenchmarkReaderEvents(b *testing.B) {
	r := NewReader(repeat(tokenEvent), Options{})
	b.SetBytes(int64(len(tokenEvent)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

// repeat is a stream of ev for ever, one per Read.
type repeat []byte

func (r repeat) Read(p []byte) (int, error) { return copy(p, r), nil }
