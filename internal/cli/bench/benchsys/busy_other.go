//go:build !linux

package benchsys

import (
	"context"
	"errors"
)

// StartBusy is Linux only.
func StartBusy(context.Context, int) (func(), error) {
	return nil, errors.New("light-busy: only on Linux")
}
