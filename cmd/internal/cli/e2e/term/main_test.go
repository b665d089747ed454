package term

import (
	"os"
	"testing"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

func TestMain(m *testing.M) {
	e2e.RaceTenure = true // see e2e.RaceTenure
	e2e.Parallel = 4      // see e2e.Parallel
	os.Exit(e2e.Main(m, toldChildMain))
}
