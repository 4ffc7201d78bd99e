package config

import (
	"strconv"
	"strings"
)

// AggregateError holds every problem found, so that a user fixes them in one round.
type AggregateError struct {
	Errs []error
}

// Error returns the only error's text, or lists the errors one per line.
func (e *AggregateError) Error() string {
	if len(e.Errs) == 1 {
		return e.Errs[0].Error()
	}
	var b strings.Builder
	b.WriteString("invalid configuration (" + strconv.Itoa(len(e.Errs)) + " errors):")
	for _, err := range e.Errs {
		b.WriteString("\n  - ")
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap exposes the individual errors to errors.Is and errors.As.
func (e *AggregateError) Unwrap() []error { return e.Errs }
