package host

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	hclog "github.com/hashicorp/go-hclog"
)

func capture() (logr.Logger, func() string) {
	var mu sync.Mutex
	var b strings.Builder
	l := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&b, "%s %s\n", prefix, args)
	}, funcr.Options{Verbosity: 1})
	return l, func() string { mu.Lock(); defer mu.Unlock(); return b.String() }
}

func TestHCLogBridge(t *testing.T) {
	l, out := capture()
	h := newHCLogBridge(l).Named("exporterset-provisioner-x").With("pid", 7)
	h.Info("hello", "key", "value")
	h.Debug("details")
	h.Trace("noise") // above the verbosity
	h.Warn("careful")
	h.Error("failed", "error", "disk full", "path", "/x")
	h.Info("odd", "lonely")                        // odd count: no panic, a placeholder
	h.Info("nonstring", 42, "v", "timestamp", "t") // non-string key, dropped timestamp
	got := out()
	for _, want := range []string{
		`exporterset-provisioner-x "level"=0 "msg"="hello" "pid"=7 "key"="value"`,
		`"level"=1 "msg"="details"`,
		`"msg"="careful"`,
		`"msg"="failed" "error"="disk full" "pid"=7 "path"="/x"`,
		`"msg"="odd" "pid"=7 "lonely"="(missing)"`,
		`"msg"="nonstring" "pid"=7 "42"="v"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s in\n%s", want, got)
		}
	}
	if strings.Contains(got, "noise") || strings.Contains(got, `"timestamp"`) {
		t.Errorf("trace or timestamp logged:\n%s", got)
	}
	if h.GetLevel() != hclog.Debug || h.IsTrace() || !h.IsDebug() || h.Name() != "exporterset-provisioner-x" {
		t.Errorf("level %v, name %q", h.GetLevel(), h.Name())
	}
}

func TestLineWriter(t *testing.T) {
	var lines []string
	w := newLineWriter(func(s string) { lines = append(lines, s) })
	for _, chunk := range []string{"par", "tial\nwhole\r\n\n", "next"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(lines, "|") != "partial|whole" {
		t.Errorf("lines %q", lines)
	}
}

func TestTailBuffer(t *testing.T) {
	var b tailBuffer
	fmt.Fprintln(&b, `{"@level":"debug","@message":"plugin address"}`)
	fmt.Fprintln(&b, `{"@level":"error","@message":"no licence"}`)
	fmt.Fprintln(&b, "panic: boom")
	if got := b.String(); got != "error: no licence | panic: boom" {
		t.Errorf("tail %q", got)
	}
	fmt.Fprint(&b, strings.Repeat("x", 2*tailMax))
	if len(b.String()) > tailMax {
		t.Errorf("tail grew to %d bytes", len(b.String()))
	}
}
