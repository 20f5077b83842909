package soak

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Kinds of history entries.
const (
	// KindAction is a step of the walk (a lease taken, a Pod failed, a spec edited...).
	KindAction = "action"
	// KindFault is a change of the injected faults (API error rate, provisioner failures).
	KindFault = "fault"
	// KindViolation is an invariant the checker found broken.
	KindViolation = "violation"
	// KindNote is anything else worth knowing when reading a failure (phase changes,
	// actions that could not be carried out).
	KindNote = "note"
)

// Entry is one line of the history.
type Entry struct {
	At   time.Time
	Kind string
	Text string
}

func (e Entry) String() string {
	return fmt.Sprintf("%s %-9s %s", e.At.Format("15:04:05.000"), e.Kind, e.Text)
}

// History is a bounded, concurrency-safe ring of what happened during a soak, oldest first.
// A failure prints its tail: what the walk did right before the violation is what explains
// it, and a long soak must not grow without bound.
type History struct {
	mu     sync.Mutex
	buf    []Entry
	next   int // where the next entry goes once the ring is full
	total  int
	counts map[string]int
}

// NewHistory returns a History keeping the last size entries.
func NewHistory(size int) *History {
	return &History{buf: make([]Entry, 0, max(size, 1)), counts: map[string]int{}}
}

// Record adds an entry of kind.
func (h *History) Record(kind, format string, args ...any) {
	e := Entry{At: time.Now(), Kind: kind, Text: fmt.Sprintf(format, args...)}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.total++
	h.counts[kind]++
	if len(h.buf) < cap(h.buf) {
		h.buf = append(h.buf, e)
		return
	}
	h.buf[h.next] = e
	h.next = (h.next + 1) % len(h.buf)
}

// Entries returns the kept entries, oldest first.
func (h *History) Entries() []Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Entry, 0, len(h.buf))
	out = append(out, h.buf[h.next:]...)
	return append(out, h.buf[:h.next]...)
}

// Total is how many entries were recorded, including those the ring dropped.
func (h *History) Total() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}

// Count is how many entries of kind were recorded.
func (h *History) Count(kind string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[kind]
}

// Tail formats the last n kept entries, one per line.
func (h *History) Tail(n int) string {
	entries := h.Entries()
	if len(entries) > n {
		entries = entries[len(entries)-n:]
	}
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}
