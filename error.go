package continuo

import (
	"errors"
	"fmt"
	"slices"
)

// Code is one of the closed set of error codes of CONTRACT.md §9.
type Code string

// The error codes. Their order follows the contract.
const (
	CodeInvalidInput        Code = "invalid_input"
	CodeUnauthorized        Code = "unauthorized"
	CodeForbidden           Code = "forbidden"
	CodeNotFound            Code = "not_found"
	CodeConflict            Code = "conflict"
	CodeRevisionConflict    Code = "revision_conflict"
	CodeTooLarge            Code = "too_large"
	CodeSessionClosed       Code = "session_closed"
	CodeGoalTerminal        Code = "goal_terminal"
	CodeGoalPlanIncomplete  Code = "goal_plan_incomplete"
	CodeProviderUnavailable Code = "provider_unavailable"
	CodeQueueFull           Code = "queue_full"
	CodeCapacityFull        Code = "capacity_full"
	CodeCarrierFenced       Code = "carrier_fenced"
	CodeUnsafeBoundary      Code = "unsafe_boundary"
	CodeTicketInvalid       Code = "ticket_invalid"
	CodeTerminalImmutable   Code = "terminal_immutable"
	CodeReconcileRequired   Code = "reconcile_required"
	CodeInvalidState        Code = "invalid_state"
	CodeRateLimited         Code = "rate_limited"
	CodeInternal            Code = "internal"
)

// codes is the closed set of error codes in the contract's order (the order
// of the const block above); tools/list publishes them in this order.
var codes = []Code{
	CodeInvalidInput,
	CodeUnauthorized,
	CodeForbidden,
	CodeNotFound,
	CodeConflict,
	CodeRevisionConflict,
	CodeTooLarge,
	CodeSessionClosed,
	CodeGoalTerminal,
	CodeGoalPlanIncomplete,
	CodeProviderUnavailable,
	CodeQueueFull,
	CodeCapacityFull,
	CodeCarrierFenced,
	CodeUnsafeBoundary,
	CodeTicketInvalid,
	CodeTerminalImmutable,
	CodeReconcileRequired,
	CodeInvalidState,
	CodeRateLimited,
	CodeInternal,
}

// Valid reports whether c is one of Codes.
func (c Code) Valid() bool { return slices.Contains(codes, c) }

// Retry tells a client what to do after an error (CONTRACT.md §1).
type Retry string

// The retry advice values.
const (
	RetryNone      Retry = "none"
	RetryFixInput  Retry = "fix_input"
	RetryWait      Retry = "wait"
	RetryReobserve Retry = "reobserve"
	RetryReconcile Retry = "reconcile"
	RetrySame      Retry = "retry_same"
)

// retryFor is the advice that goes with each code. A code missing here, or
// one here that is not in codes, is a programming error caught by
// TestRetryCoversEveryCode.
var retryFor = map[Code]Retry{
	CodeInvalidInput:        RetryFixInput,
	CodeUnauthorized:        RetryNone,
	CodeForbidden:           RetryNone,
	CodeNotFound:            RetryFixInput,
	CodeConflict:            RetryReobserve,
	CodeRevisionConflict:    RetryReobserve,
	CodeTooLarge:            RetryFixInput,
	CodeSessionClosed:       RetryNone,
	CodeGoalTerminal:        RetryNone,
	CodeGoalPlanIncomplete:  RetryFixInput,
	CodeProviderUnavailable: RetryWait,
	CodeQueueFull:           RetryWait,
	CodeCapacityFull:        RetryWait,
	CodeCarrierFenced:       RetryNone,
	CodeUnsafeBoundary:      RetryWait,
	CodeTicketInvalid:       RetryNone,
	CodeTerminalImmutable:   RetryNone,
	CodeReconcileRequired:   RetryReconcile,
	CodeInvalidState:        RetryReobserve,
	CodeRateLimited:         RetryWait,
	CodeInternal:            RetrySame,
}

// Codes returns every error code, in the contract's order (CONTRACT.md §9),
// for tests and schemas.
func Codes() []Code { return slices.Clone(codes) }

// RetryFor returns the retry advice for code.
func RetryFor(code Code) Retry {
	if r, ok := retryFor[code]; ok {
		return r
	}
	return RetryNone
}

// Error is a domain error: a contract code, a message that is safe to show a
// model (never a secret), and machine-readable details.
type Error struct {
	Code    Code
	Message string
	Details map[string]any
	// Cause is what went wrong underneath (a git error with its stderr, a
	// path): the edge logs it and never shows it.
	Cause error
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Because returns a copy of e with a cause to log.
func (e *Error) Because(cause error) *Error {
	c := *e
	c.Cause = cause
	return &c
}

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// With returns a copy of e with one more detail.
func (e *Error) With(key string, value any) *Error {
	d := make(map[string]any, len(e.Details)+1)
	for k, v := range e.Details {
		d[k] = v
	}
	d[key] = value
	return &Error{Code: e.Code, Message: e.Message, Details: d, Cause: e.Cause}
}

// Invalid reports bad input in one named field.
func Invalid(field, format string, args ...any) *Error {
	return Errorf(CodeInvalidInput, "%s: "+format, append([]any{field}, args...)...).With("field", field)
}

// NotFound reports an object that does not exist or that the caller may not
// see; the two are deliberately indistinguishable.
func NotFound(kind, id string) *Error {
	return Errorf(CodeNotFound, "%s %q not found", kind, id)
}

// ErrorCode returns the contract code of err: the code of the first *Error
// in its chain, or internal.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// AsError returns err as an *Error. Errors without a code become internal,
// with a generic message so that nothing unvetted (a path, a driver message,
// a secret) reaches a client.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: "internal error"}
}
