package bench

import (
	"os"
	"testing"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

func TestMain(m *testing.M) {
	os.Exit(e2e.Main(m))
}
