package serve_test

import (
	"os"
	"testing"

	"github.com/txinbox/txinbox/internal/cli/clitest"
)

// TestMain builds the txinbox binary that some tests run (clitest.Bin).
func TestMain(m *testing.M) { os.Exit(clitest.BuildAndRun(m)) }

var run = clitest.Run
