package main

import (
	"context"
	"flag"
	"os"
	"time"

	"github.com/chromedp/chromedp"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:7979/", "")
	out := flag.String("out", "/tmp/shot.png", "")
	w := flag.Int("w", 1440, "")
	h := flag.Int("h", 1000, "")
	wait := flag.Duration("wait", 8*time.Second, "")
	js := flag.String("js", "", "script to run after the wait")
	flag.Parse()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath("/usr/bin/chromium"), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.WindowSize(*w, *h))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	_, err := chromedp.Run(ctx, chromedp.EmulateViewport(int64(*w), int64(*h)))
	must(err)
	_, err = chromedp.Run(ctx, chromedp.Navigate(*url))
	must(err)
	time.Sleep(*wait)
	if *js != "" {
		_, err = chromedp.Run(ctx, chromedp.Evaluate[any](*js))
		must(err)
		time.Sleep(3 * time.Second)
	}
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	must(err)
	must(os.WriteFile(*out, buf, 0o644))
}
