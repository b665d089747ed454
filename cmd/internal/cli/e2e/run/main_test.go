package run

import (
	"os"
	"testing"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

func TestMain(m *testing.M) {
	e2e.RaceTenure = true // see e2e.RaceTenure
	os.Exit(e2e.Main(m))
}
