package chaos

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/tenure-dev/tenure/internal/history"
)

// eventWriter writes events as JSON lines, one at a time.
type eventWriter struct {
	mu     sync.Mutex
	enc    *json.Encoder
	holder string
}

func newEventWriter(w io.Writer, holder string) *eventWriter {
	return &eventWriter{enc: json.NewEncoder(w), holder: holder}
}

func (w *eventWriter) emit(ev history.Event) {
	ev.Holder = w.holder
	if ev.At == 0 {
		ev.At = Mono()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.enc.Encode(ev)
}
