package host

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	hclog "github.com/hashicorp/go-hclog"
)

// go-plugin logs through hclog, and parses each plugin's stderr (hclog JSON lines) into hclog
// calls. hclogBridge forwards them into the controller's logr.Logger, so plugin output lands in
// the controller's structured log under the plugin's name, at the level the plugin logged.
//
// Levels: Error -> Error, Warn and Info -> Info, Debug -> V(1), Trace -> V(2).
type hclogBridge struct {
	log  logr.Logger
	name string
	args []any
}

var _ hclog.Logger = (*hclogBridge)(nil)

func newHCLogBridge(l logr.Logger) hclog.Logger { return &hclogBridge{log: l} }

func (b *hclogBridge) Log(level hclog.Level, msg string, args ...any) {
	kv := sanitizeKV(args)
	switch level {
	case hclog.Error:
		err, rest := splitError(kv)
		b.log.Error(err, msg, rest...)
	case hclog.Trace:
		b.log.V(2).Info(msg, kv...)
	case hclog.Debug:
		b.log.V(1).Info(msg, kv...)
	default: // Info, Warn, NoLevel: logr has no warning level
		b.log.Info(msg, kv...)
	}
}

func (b *hclogBridge) Trace(msg string, args ...any) { b.Log(hclog.Trace, msg, args...) }
func (b *hclogBridge) Debug(msg string, args ...any) { b.Log(hclog.Debug, msg, args...) }
func (b *hclogBridge) Info(msg string, args ...any)  { b.Log(hclog.Info, msg, args...) }
func (b *hclogBridge) Warn(msg string, args ...any)  { b.Log(hclog.Warn, msg, args...) }
func (b *hclogBridge) Error(msg string, args ...any) { b.Log(hclog.Error, msg, args...) }

func (b *hclogBridge) IsTrace() bool { return b.log.V(2).Enabled() }
func (b *hclogBridge) IsDebug() bool { return b.log.V(1).Enabled() }
func (b *hclogBridge) IsInfo() bool  { return b.log.Enabled() }
func (b *hclogBridge) IsWarn() bool  { return b.log.Enabled() }
func (b *hclogBridge) IsError() bool { return true }

func (b *hclogBridge) ImpliedArgs() []any { return b.args }

func (b *hclogBridge) With(args ...any) hclog.Logger {
	kv := sanitizeKV(args)
	return &hclogBridge{log: b.log.WithValues(kv...), name: b.name, args: append(append([]any(nil), b.args...), kv...)}
}

func (b *hclogBridge) Name() string { return b.name }

func (b *hclogBridge) Named(name string) hclog.Logger {
	full := name
	if b.name != "" {
		full = b.name + "." + name
	}
	return &hclogBridge{log: b.log.WithName(name), name: full, args: b.args}
}

// ResetNamed cannot drop logr names already given; it adds name like Named.
func (b *hclogBridge) ResetNamed(name string) hclog.Logger {
	return &hclogBridge{log: b.log.WithName(name), name: name, args: b.args}
}

// SetLevel is a no-op: the verbosity is the controller's (its logr sink's).
func (b *hclogBridge) SetLevel(hclog.Level) {}

// GetLevel reports the logr verbosity, so that go-plugin skips plugin lines below it early.
func (b *hclogBridge) GetLevel() hclog.Level {
	switch {
	case b.log.V(2).Enabled():
		return hclog.Trace
	case b.log.V(1).Enabled():
		return hclog.Debug
	default:
		return hclog.Info
	}
}

func (b *hclogBridge) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(b.StandardWriter(opts), "", 0)
}

func (b *hclogBridge) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return newLineWriter(func(line string) { b.log.Info(line) })
}

// sanitizeKV returns args as logr key/value pairs: string keys, an even count. logr
// implementations may panic in development mode on anything else, and plugin lines are
// untrusted input. The "timestamp" go-plugin adds is dropped: the controller's log has its own.
func sanitizeKV(args []any) []any {
	if len(args) == 0 {
		return nil
	}
	out := make([]any, 0, len(args)+1)
	for i := 0; i < len(args); i += 2 {
		key, ok := args[i].(string)
		if !ok {
			key = fmt.Sprint(args[i])
		}
		if key == "timestamp" {
			continue
		}
		var val any = "(missing)"
		if i+1 < len(args) {
			val = args[i+1]
		}
		out = append(out, key, val)
	}
	return out
}

// splitError takes hclog's conventional "error" (or "err") value out of kv, for logr.Error.
func splitError(kv []any) (error, []any) {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] != "error" && kv[i] != "err" {
			continue
		}
		rest := append(append([]any(nil), kv[:i]...), kv[i+2:]...)
		switch v := kv[i+1].(type) {
		case error:
			return v, rest
		case string:
			return errors.New(v), rest
		default:
			return fmt.Errorf("%v", v), rest
		}
	}
	return nil, kv
}

// lineWriter calls emit for every complete line written to it. It receives what a plugin
// writes to os.Stdout and os.Stderr after Serve started (go-plugin's SyncStdout/SyncStderr).
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	emit func(string)
}

func newLineWriter(emit func(string)) *lineWriter { return &lineWriter{emit: emit} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimRight(string(w.buf[:i]), "\r"); line != "" {
			w.emit(line)
		}
		w.buf = w.buf[i+1:]
	}
	// A line longer than this is logged in pieces rather than buffered without bound.
	if len(w.buf) > 64<<10 {
		w.emit(string(w.buf))
		w.buf = w.buf[:0]
	}
	return len(p), nil
}
