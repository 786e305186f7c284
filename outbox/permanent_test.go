package outbox_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/outbox"
)

// TestPermanentIsTheModulesType: the relay and the inbox share one
// permanent-error type, whichever package wrapped the error.
func TestPermanentIsTheModulesType(t *testing.T) {
	cause := errors.New("partner refuses")
	var pe *txinbox.PermanentError
	if err := fmt.Errorf("send: %w", outbox.Permanent(cause)); !errors.As(err, &pe) || !errors.Is(err, cause) {
		t.Errorf("outbox.Permanent(...) = %v: want a *txinbox.PermanentError wrapping the cause", err)
	}
	if !outbox.IsPermanent(fmt.Errorf("send: %w", txinbox.Permanent(cause))) {
		t.Error("IsPermanent(txinbox.Permanent(...)) = false")
	}
	if outbox.IsPermanent(cause) || outbox.Permanent(nil) != nil {
		t.Error("a plain error is permanent, or Permanent(nil) is not nil")
	}
}
