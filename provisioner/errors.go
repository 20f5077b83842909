package provisioner

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Code classifies a provisioner error; the reconciler maps it to a condition and a retry.
type Code string

const (
	// CodeInvalid: the input (parameters, class, set) is wrong. A person must fix it; the
	// reconciler reports a condition and does not retry until the input changes.
	CodeInvalid Code = "Invalid"
	// CodeTransient: the call may succeed if retried (a crashed plugin, a timeout, a cloud
	// API hiccup). The reconciler retries with backoff and never deletes because of it.
	CodeTransient Code = "Transient"
	// CodeInternal: a bug or an unexpected failure of the provisioner.
	CodeInternal Code = "Internal"
)

// Error is a provisioner failure with its Code and, for CodeInvalid, field-path errors.
type Error struct {
	// Code classifies the failure.
	Code Code
	// Fields are the field-path errors of CodeInvalid, rooted at "parameters" or "spec".
	Fields field.ErrorList
	// Err is the underlying cause, if any.
	Err error
}

// Error joins the field errors, or returns the cause.
func (e *Error) Error() string {
	switch {
	case len(e.Fields) > 0:
		return e.Fields.ToAggregate().Error()
	case e.Err != nil:
		return e.Err.Error()
	default:
		return string(e.Code)
	}
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// InvalidFields returns a CodeInvalid error for field errors, or nil when there are none.
func InvalidFields(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return &Error{Code: CodeInvalid, Fields: errs}
}

// Invalid wraps err as CodeInvalid.
func Invalid(err error) error { return &Error{Code: CodeInvalid, Err: err} }

// Transient wraps err as CodeTransient.
func Transient(err error) error { return &Error{Code: CodeTransient, Err: err} }

// Internal wraps err as CodeInternal.
func Internal(err error) error { return &Error{Code: CodeInternal, Err: err} }

// CodeOf returns the Code of err; errors that are not an *Error count as CodeInternal.
func CodeOf(err error) Code {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return CodeInternal
}

// IsInvalid reports whether err is a CodeInvalid error.
func IsInvalid(err error) bool { return err != nil && CodeOf(err) == CodeInvalid }

// IsTransient reports whether err is a CodeTransient error.
func IsTransient(err error) bool { return err != nil && CodeOf(err) == CodeTransient }

// Errorf returns a CodeInternal error with a formatted message.
func Errorf(format string, args ...any) error { return Internal(fmt.Errorf(format, args...)) }
