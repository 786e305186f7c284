//go:build !linux

package bench

import (
	"context"
	"errors"
)

func startBusy(context.Context, int) (func(), error) {
	return nil, errors.New("light-busy: only on Linux")
}
