//go:build !unix

package bench

import (
	"context"
	"errors"
)

func startBusy(context.Context, int) (func(), error) {
	return nil, errors.New("light-busy: not available on this system")
}
