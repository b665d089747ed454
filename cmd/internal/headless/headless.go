// Package headless drives a headless Chromium for tests, through chromedp:
// render a page once and read its DOM (DumpDOM), or open a page and watch it
// change without reloading it (Open, then Eval as often as needed).
//
// Every test that needs Chromium goes through Need, so that a missing
// browser fails the test where it is required (CI) and is skipped, loudly,
// elsewhere (see internal/require).
package headless

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/tenure-dev/tenure/internal/require"
)

// ErrNotFound is returned by Find when no Chromium is installed.
var ErrNotFound = errors.New("headless: chromium not found (Debian package chromium)")

// Find returns the path of the chromium binary, or ErrNotFound.
func Find() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNotFound
}

// Need returns the chromium binary for test t, or ends t through
// require.Chromium when there is none.
func Need(t require.T) string {
	t.Helper()
	path, err := Find()
	if err != nil {
		require.Chromium.Missing(t, err)
	}
	return path
}

// A Browser is one headless Chromium process showing one page.
type Browser struct {
	ctx         context.Context // the tab's chromedp context
	cancelTab   context.CancelFunc
	cancelAlloc context.CancelFunc
}

// Open starts chromium (a path from Find) with a window of width × height
// pixels and navigates to url. ctx bounds the start only. Close the Browser
// when done.
func Open(ctx context.Context, chromium, url string, width, height int) (*Browser, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(width, height),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	b := &Browser{ctx: tabCtx, cancelTab: cancelTab, cancelAlloc: cancelAlloc}
	// The first Run starts the browser and ties its life to the context it
	// is given: that must be the tab's own, not one bounded by ctx.
	started := make(chan error, 1)
	go func() { started <- chromedp.Run(tabCtx) }()
	select {
	case err := <-started:
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("headless: start %s: %w", chromium, err)
		}
	case <-ctx.Done():
		b.Close()
		<-started
		return nil, fmt.Errorf("headless: start %s: %w", chromium, ctx.Err())
	}
	if err := b.run(ctx, chromedp.Navigate(url)); err != nil {
		b.Close()
		return nil, fmt.Errorf("headless: open %s: %w", url, err)
	}
	return b, nil
}

// run runs actions in the page, bounded by ctx as well as the page's life.
func (b *Browser) run(ctx context.Context, actions ...chromedp.Action) error {
	runCtx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	err := chromedp.Run(runCtx, actions...)
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", err, ctx.Err())
	}
	return err
}

// Eval evaluates the JavaScript expression expr in the page (awaiting it
// when it is a promise) and decodes its JSON value into out.
func (b *Browser) Eval(ctx context.Context, expr string, out any) error {
	await := func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }
	if err := b.run(ctx, chromedp.Evaluate(expr, out, await)); err != nil {
		return fmt.Errorf("headless: evaluate %q: %w", expr, err)
	}
	return nil
}

// Reload reloads the page and returns once the reloaded page has loaded,
// so that an Eval after it runs in the new page, not the one going away.
func (b *Browser) Reload(ctx context.Context) error {
	if err := b.run(ctx, chromedp.Reload()); err != nil {
		return fmt.Errorf("headless: reload: %w", err)
	}
	return nil
}

// Screenshot returns a PNG of the page as it is now.
func (b *Browser) Screenshot(ctx context.Context) ([]byte, error) {
	var png []byte
	if err := b.run(ctx, chromedp.CaptureScreenshot(&png)); err != nil {
		return nil, fmt.Errorf("headless: screenshot: %w", err)
	}
	return png, nil
}

// SaveScreenshot writes a PNG of the page as it is now to
// $TENURE_SCREENSHOT_DIR/name, for a person to look at, when that variable
// is set; it does nothing otherwise.
func (b *Browser) SaveScreenshot(ctx context.Context, name string) error {
	dir := os.Getenv("TENURE_SCREENSHOT_DIR")
	if dir == "" {
		return nil
	}
	png, err := b.Screenshot(ctx)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, name), png, 0o644)
	}
	if err != nil {
		return fmt.Errorf("headless: screenshot %s: %w", name, err)
	}
	return nil
}

// MainThreadTime is the CPU time that the page's main thread has used so
// far (the DevTools protocol's Performance.getMetrics ThreadTime). Unlike
// time measured in the page, it does not grow while the page waits for a
// core on a busy machine: the difference across an action is what the
// action costs.
func (b *Browser) MainThreadTime(ctx context.Context) (time.Duration, error) {
	var metrics []*performance.Metric
	err := b.run(ctx, performance.Enable(), chromedp.ActionFunc(func(ctx context.Context) (err error) {
		metrics, err = performance.GetMetrics().Do(ctx)
		return err
	}))
	if err != nil {
		return 0, fmt.Errorf("headless: performance metrics: %w", err)
	}
	for _, m := range metrics {
		if m.Name == "ThreadTime" {
			return time.Duration(m.Value * float64(time.Second)), nil
		}
	}
	return 0, errors.New("headless: no ThreadTime in the performance metrics")
}

// Close stops Chromium and removes its profile.
func (b *Browser) Close() error {
	b.cancelTab()
	b.cancelAlloc()
	return nil
}

// DumpDOM loads url in a fresh headless Chromium, waits for the page to
// finish loading and its scripts to run, and returns the rendered DOM as
// HTML.
func DumpDOM(ctx context.Context, chromium, url string) (string, error) {
	b, err := Open(ctx, chromium, url, 1280, 900)
	if err != nil {
		return "", err
	}
	defer b.Close()
	var html string
	if err := b.run(ctx, chromedp.WaitReady("body"), chromedp.OuterHTML("html", &html)); err != nil {
		return "", fmt.Errorf("headless: read the DOM of %s: %w", url, err)
	}
	return html, nil
}
