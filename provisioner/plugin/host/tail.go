package host

import (
	"encoding/json"
	"strings"
	"sync"
)

// tailBuffer keeps the end of a plugin's raw stderr, so that a plugin that dies while starting
// is reported with its last words (a panic, a missing library) in the error itself rather
// than only in the log.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 4 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailMax {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailMax:]...)
	}
	return len(p), nil
}

// String returns the last lines kept, joined with " | " to stay on one log line. hclog JSON
// lines (what plugin.Serve logs) become "level: message"; debug and trace lines are left out,
// being go-plugin's own chatter.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, l := range strings.Split(string(t.buf), "\n") {
		l = strings.TrimSpace(l)
		var entry struct {
			Level   string `json:"@level"`
			Message string `json:"@message"`
		}
		if strings.HasPrefix(l, "{") && json.Unmarshal([]byte(l), &entry) == nil && entry.Message != "" {
			if entry.Level == "debug" || entry.Level == "trace" {
				continue
			}
			l = entry.Level + ": " + entry.Message
		}
		if l != "" {
			out = append(out, l)
		}
	}
	if len(out) > 10 {
		out = out[len(out)-10:]
	}
	return strings.Join(out, " | ")
}
