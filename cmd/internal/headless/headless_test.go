package headless_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tenure-dev/tenure/cmd/internal/headless"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A page that changes by itself is seen changing, in the same page load.
func TestEvalSeesLiveChanges(t *testing.T) {
	chromium := headless.Need(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><p id="n">0</p><script>
			window.loaded = (window.loaded || 0) + 1;
			sessionStorage.setItem("loads", Number(sessionStorage.getItem("loads")) + 1);
			let n = 0; setInterval(() => { document.getElementById("n").textContent = ++n; }, 50);
		</script>`))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := headless.Open(ctx, chromium, srv.URL, 800, 600)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var first, later, loads int
	deadline := time.Now().Add(30 * time.Second)
	for first == 0 || later <= first {
		if time.Now().After(deadline) {
			t.Fatalf("counter stuck at %d, %d", first, later)
		}
		var n int
		if err := b.Eval(ctx, `Number(document.getElementById("n")?.textContent ?? 0)`, &n); err != nil {
			t.Fatal(err)
		}
		if first == 0 {
			first = n
		} else {
			later = n
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := b.Eval(ctx, `window.loaded`, &loads); err != nil || loads != 1 {
		t.Errorf("window.loaded = %d, %v; want 1 (no reload)", loads, err)
	}
	if err := b.Eval(ctx, `nosuchvariable`, &loads); err == nil {
		t.Error("Eval(nosuchvariable) error = nil; want the page's ReferenceError")
	}
	// Reload returns once the new page has loaded: an Eval right after it
	// runs in the new page (its script has run) and does not fail on the
	// page going away.
	if err := b.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Eval(ctx, `window.loaded`, &loads); err != nil || loads != 1 {
		t.Errorf("window.loaded right after Reload = %d, %v; want 1, set by the reloaded page's script", loads, err)
	}
	var stored int
	if err := b.Eval(ctx, `Number(sessionStorage.getItem("loads"))`, &stored); err != nil || stored != 2 {
		t.Errorf("loads counted in sessionStorage right after Reload = %d, %v; want 2", stored, err)
	}
	png, err := b.Screenshot(ctx)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("Screenshot() = %d bytes, %v; want a PNG", len(png), err)
	}
}

// DumpDOM returns the DOM after the page's scripts ran, not the source.
func TestDumpDOMRunsScripts(t *testing.T) {
	chromium := headless.Need(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><body><script>
			const p = document.createElement("p"); p.id = "made"; p.textContent = "by script"; document.body.appendChild(p);
		</script></body>`))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dom, err := headless.DumpDOM(ctx, chromium, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dom, `<p id="made">by script</p>`) {
		t.Fatalf("DumpDOM() = %.500s; want the paragraph the script made", dom)
	}
}
