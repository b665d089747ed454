// Package headless drives a headless Chromium over the DevTools protocol,
// so that tests can watch a live page change without reloading it: open a
// page once, then evaluate JavaScript in it as often as needed.
package headless

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// RequireEnv, set to 1 (as CI does), makes Find fail instead of skip when
// Chromium is missing.
const RequireEnv = "TENURE_REQUIRE_CHROMIUM"

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

// A Browser is one headless Chromium process showing one page.
type Browser struct {
	cmd     *exec.Cmd
	dir     string
	stderrc chan struct{} // closed when Chromium's stderr is drained

	mu   sync.Mutex
	conn *websocket.Conn
	seq  int
}

// Open starts chromium (a path from Find) on url with a window of width ×
// height pixels and connects to the page. ctx bounds the start only. Close
// the Browser when done.
func Open(ctx context.Context, chromium, url string, width, height int) (*Browser, error) {
	dir, err := os.MkdirTemp("", "tenure-headless-")
	if err != nil {
		return nil, err
	}
	b := &Browser{dir: dir, stderrc: make(chan struct{})}
	b.cmd = exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--user-data-dir="+dir,
		fmt.Sprintf("--window-size=%d,%d", width, height), url)
	stderr, err := b.cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := b.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("headless: start %s: %w", chromium, err)
	}
	devtools := make(chan string, 1)
	go func() {
		defer close(b.stderrc)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, ws, ok := strings.Cut(sc.Text(), "DevTools listening on "); ok {
				select {
				case devtools <- ws:
				default:
				}
			}
		}
	}()
	if err := b.connect(ctx, devtools, url); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// connect finds the page target on the DevTools endpoint and dials it.
func (b *Browser) connect(ctx context.Context, devtools <-chan string, url string) error {
	var ws string
	select {
	case ws = <-devtools:
	case <-b.stderrc:
		return errors.New("headless: chromium exited before it listened for DevTools")
	case <-ctx.Done():
		return fmt.Errorf("headless: waiting for DevTools: %w", ctx.Err())
	}
	host := strings.TrimPrefix(ws, "ws://")
	host, _, _ = strings.Cut(host, "/")
	for {
		var targets []struct{ Type, URL, WebSocketDebuggerURL string }
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/json/list", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
			for _, t := range targets {
				if err == nil && t.Type == "page" && t.WebSocketDebuggerURL != "" {
					conn, _, err := websocket.DefaultDialer.DialContext(ctx, t.WebSocketDebuggerURL, nil)
					if err != nil {
						return fmt.Errorf("headless: dial page %s: %w", t.URL, err)
					}
					b.conn = conn
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("headless: no page target for %s: %w", url, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// call sends one DevTools command and decodes its result into out.
func (b *Browser) call(ctx context.Context, method string, params, out any) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	id := b.seq
	if d, ok := ctx.Deadline(); ok {
		_ = b.conn.SetReadDeadline(d)
		defer b.conn.SetReadDeadline(time.Time{})
	}
	if err := b.conn.WriteJSON(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return fmt.Errorf("headless: %s: %w", method, err)
	}
	for {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := b.conn.ReadJSON(&msg); err != nil {
			return fmt.Errorf("headless: %s: %w", method, err)
		}
		if msg.ID != id {
			continue // an event, or the reply to an abandoned call
		}
		if msg.Error != nil {
			return fmt.Errorf("headless: %s: %s", method, msg.Error.Message)
		}
		return json.Unmarshal(msg.Result, out)
	}
}

// Eval evaluates the JavaScript expression expr in the page (awaiting it
// when it is a promise) and decodes its JSON value into out.
func (b *Browser) Eval(ctx context.Context, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	params := map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}
	if err := b.call(ctx, "Runtime.evaluate", params, &r); err != nil {
		return err
	}
	if r.Exception != nil {
		return fmt.Errorf("headless: evaluate %q: %s %s", expr, r.Exception.Text, r.Exception.Exception.Description)
	}
	if len(r.Result.Value) == 0 {
		return fmt.Errorf("headless: evaluate %q: no value", expr)
	}
	return json.Unmarshal(r.Result.Value, out)
}

// Screenshot returns a PNG of the page as it is now.
func (b *Browser) Screenshot(ctx context.Context) ([]byte, error) {
	var r struct {
		Data string `json:"data"`
	}
	if err := b.call(ctx, "Page.captureScreenshot", map[string]any{"format": "png"}, &r); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(r.Data)
}

// Close stops Chromium and removes its profile.
func (b *Browser) Close() error {
	if b.conn != nil {
		b.conn.Close()
	}
	_ = b.cmd.Process.Kill()
	<-b.stderrc
	_ = b.cmd.Wait()
	return os.RemoveAll(b.dir)
}
