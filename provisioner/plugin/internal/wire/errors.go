package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/pluginpb"
)

// A provisioner error crosses the wire as the detail of a gRPC status, so that its code, its
// field errors and its exact text survive: the reconciler maps the code to conditions and
// retries, and people see the same message whether the provisioner is built in or a plugin.

// errorToStatus returns the gRPC status error the plugin side answers for err.
func errorToStatus(err error) error {
	code := codeOf(err)
	detail := &pluginpb.Error{Code: codeToPB(code), Message: err.Error()}
	var pe *provisioner.Error
	if errors.As(err, &pe) {
		detail.Fields = fieldsToPB(pe.Fields)
	}
	st := status.New(grpcCode(code), detail.Message)
	if withDetail, derr := st.WithDetails(detail); derr == nil {
		st = withDetail
	}
	return st.Err()
}

// codeOf is provisioner.CodeOf, except that a bare context error counts as transient: a
// provisioner that returns ctx.Err() was cancelled, which says nothing about its input.
func codeOf(err error) provisioner.Code {
	var pe *provisioner.Error
	if !errors.As(err, &pe) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return provisioner.CodeTransient
	}
	return provisioner.CodeOf(err)
}

func grpcCode(c provisioner.Code) codes.Code {
	switch c {
	case provisioner.CodeInvalid:
		return codes.InvalidArgument
	case provisioner.CodeTransient:
		return codes.Unavailable
	default:
		return codes.Internal
	}
}

func codeToPB(c provisioner.Code) pluginpb.Code {
	switch c {
	case provisioner.CodeInvalid:
		return pluginpb.Code_CODE_INVALID
	case provisioner.CodeTransient:
		return pluginpb.Code_CODE_TRANSIENT
	default:
		return pluginpb.Code_CODE_INTERNAL
	}
}

func codeFromPB(c pluginpb.Code) provisioner.Code {
	switch c {
	case pluginpb.Code_CODE_INVALID:
		return provisioner.CodeInvalid
	case pluginpb.Code_CODE_TRANSIENT:
		return provisioner.CodeTransient
	default:
		return provisioner.CodeInternal
	}
}

// errorFromStatus turns the error of an RPC into a provisioner error: the plugin's own error
// when the status carries one, else a *TransportError classified by its gRPC code.
func errorFromStatus(method string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return provisioner.Transient(&TransportError{Method: method, Code: codes.Unknown, Message: err.Error()})
	}
	for _, d := range st.Details() {
		if detail, ok := d.(*pluginpb.Error); ok {
			return errorFromPB(detail)
		}
	}
	te := &TransportError{Method: method, Code: st.Code(), Message: st.Message()}
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted, codes.ResourceExhausted:
		return provisioner.Transient(te)
	default:
		// Unimplemented (a protocol mismatch), Unknown, Internal...: retrying will not help.
		return provisioner.Internal(te)
	}
}

func errorFromPB(detail *pluginpb.Error) error {
	e := &provisioner.Error{Code: codeFromPB(detail.GetCode()), Fields: fieldsFromPB(detail.GetFields())}
	if len(e.Fields) == 0 {
		e.Err = errors.New(detail.GetMessage())
	}
	if e.Error() == detail.GetMessage() {
		return e
	}
	// The plugin wrapped its *provisioner.Error (fmt.Errorf("...: %w", err)): keep its text.
	return &remoteError{msg: detail.GetMessage(), err: e}
}

// remoteError is a plugin error whose text is not the one its *provisioner.Error would print.
type remoteError struct {
	msg string
	err *provisioner.Error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.err }

// TransportError is an RPC that failed without an answer from the provisioner: the plugin
// process died, the connection broke, the deadline passed or the plugin does not implement the
// method. The host reports it as transient (Unavailable, DeadlineExceeded, Canceled...) or
// internal (Unimplemented...).
type TransportError struct {
	// Method is the RPC, e.g. "RenderPod".
	Method string
	// Code is the gRPC status code.
	Code codes.Code
	// Message is the gRPC status message.
	Message string
}

// Error names the RPC and the gRPC status.
func (e *TransportError) Error() string {
	return fmt.Sprintf("plugin RPC %s failed: %s: %s", e.Method, e.Code, e.Message)
}

func fieldsToPB(errs field.ErrorList) []*pluginpb.FieldError {
	if len(errs) == 0 {
		return nil
	}
	out := make([]*pluginpb.FieldError, 0, len(errs))
	for _, e := range errs {
		if e == nil {
			continue
		}
		kind, value := badValueToPB(e.BadValue)
		out = append(out, &pluginpb.FieldError{
			Type:                 string(e.Type),
			Field:                e.Field,
			BadValueKind:         kind,
			BadValue:             value,
			Detail:               e.Detail,
			Origin:               e.Origin,
			CoveredByDeclarative: e.CoveredByDeclarative,
		})
	}
	return out
}

func fieldsFromPB(in []*pluginpb.FieldError) field.ErrorList {
	if len(in) == 0 {
		return nil
	}
	out := make(field.ErrorList, 0, len(in))
	for _, e := range in {
		out = append(out, &field.Error{
			Type:                 field.ErrorType(e.GetType()),
			Field:                e.GetField(),
			BadValue:             badValueFromPB(e.GetBadValueKind(), e.GetBadValue()),
			Detail:               e.GetDetail(),
			Origin:               e.GetOrigin(),
			CoveredByDeclarative: e.GetCoveredByDeclarative(),
		})
	}
	return out
}

// badValueToPB encodes v so that badValueFromPB returns a value field.Error prints the same
// way: field.Error prints some Go types with %v, strings quoted, and the rest as JSON, falling
// back to String() or %#v when JSON fails.
func badValueToPB(v any) (pluginpb.BadValueKind, string) {
	switch t := v.(type) {
	case nil:
		return pluginpb.BadValueKind_BAD_VALUE_KIND_UNSPECIFIED, ""
	case field.OmitValueType:
		return pluginpb.BadValueKind_BAD_VALUE_KIND_OMITTED, ""
	case string:
		return pluginpb.BadValueKind_BAD_VALUE_KIND_STRING, t
	case int64:
		return pluginpb.BadValueKind_BAD_VALUE_KIND_INT64, strconv.FormatInt(t, 10)
	case int32:
		return pluginpb.BadValueKind_BAD_VALUE_KIND_INT32, strconv.FormatInt(int64(t), 10)
	case float64:
		return pluginpb.BadValueKind_BAD_VALUE_KIND_FLOAT64, strconv.FormatFloat(t, 'g', -1, 64)
	case float32:
		return pluginpb.BadValueKind_BAD_VALUE_KIND_FLOAT32, strconv.FormatFloat(float64(t), 'g', -1, 32)
	case bool:
		return pluginpb.BadValueKind_BAD_VALUE_KIND_BOOL, strconv.FormatBool(t)
	}
	if b, err := json.Marshal(v); err == nil {
		return pluginpb.BadValueKind_BAD_VALUE_KIND_JSON, string(b)
	}
	if s, ok := v.(fmt.Stringer); ok {
		return pluginpb.BadValueKind_BAD_VALUE_KIND_TEXT, s.String()
	}
	return pluginpb.BadValueKind_BAD_VALUE_KIND_TEXT, fmt.Sprintf("%#v", v)
}

func badValueFromPB(kind pluginpb.BadValueKind, s string) any {
	switch kind {
	case pluginpb.BadValueKind_BAD_VALUE_KIND_OMITTED:
		return field.OmitValueType{}
	case pluginpb.BadValueKind_BAD_VALUE_KIND_STRING:
		return s
	case pluginpb.BadValueKind_BAD_VALUE_KIND_INT64:
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	case pluginpb.BadValueKind_BAD_VALUE_KIND_INT32:
		if n, err := strconv.ParseInt(s, 10, 32); err == nil {
			return int32(n)
		}
	case pluginpb.BadValueKind_BAD_VALUE_KIND_FLOAT64:
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
	case pluginpb.BadValueKind_BAD_VALUE_KIND_FLOAT32:
		if f, err := strconv.ParseFloat(s, 32); err == nil {
			return float32(f)
		}
	case pluginpb.BadValueKind_BAD_VALUE_KIND_BOOL:
		if b, err := strconv.ParseBool(s); err == nil {
			return b
		}
	case pluginpb.BadValueKind_BAD_VALUE_KIND_JSON:
		if json.Valid([]byte(s)) {
			return json.RawMessage(s)
		}
	case pluginpb.BadValueKind_BAD_VALUE_KIND_TEXT:
		return printedValue(s)
	case pluginpb.BadValueKind_BAD_VALUE_KIND_UNSPECIFIED:
		return nil
	}
	// A malformed value from a buggy plugin: show what was sent.
	return printedValue(s)
}

// printedValue is a bad value that field.Error prints as its text: it refuses JSON, so
// field.Error falls back to String().
type printedValue string

func (v printedValue) String() string { return string(v) }

// MarshalJSON fails on purpose; see printedValue.
func (v printedValue) MarshalJSON() ([]byte, error) {
	return nil, errors.New("printed value")
}
