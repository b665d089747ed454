package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
)

// shared is the memory coordinator every member of a test group uses: the
// benchmark closes each member's coordinator, which must not close it.
type shared struct{ *memory.Coordinator }

func (shared) Close() error { return nil }

// TestPartitionsExplainsAFailedPhase: a group whose members' requests to
// the coordinator are all lost cannot start. Partitions must fail with a
// *PhaseError that says which phase, how far it got, how fast partitions
// were starting, how much CPU the process had, and what the members' logs
// say the coordinator answered, not only "0 of 20".
func TestPartitionsExplainsAFailedPhase(t *testing.T) {
	coord := memory.New()
	defer coord.Close()
	const members = 3
	for i := range members {
		coord.Block(fmt.Sprintf("member-%02d#1", i))
	}
	_, err := Partitions(context.Background(), PartitionsOptions{
		Partitions: 20, Members: members, TTL: 2 * time.Second, Limit: 3 * time.Second,
		NewCoordinator: func(context.Context) (partition.Coordinator, error) { return shared{coord}, nil },
	})
	var pe *PhaseError
	if !errors.As(err, &pe) {
		t.Fatalf("Partitions = %v; want a *PhaseError", err)
	}
	if pe.Phase != "cold start" || pe.Running != 0 || pe.Partitions != 20 || pe.Rate != 0 || pe.Waited < 3*time.Second {
		t.Errorf("PhaseError %+v; want the cold start, 0 of 20 running, none started, after at least 3s", pe)
	}
	msg := err.Error()
	for _, want := range []string{
		"cold start: 0 of 20 partitions running after", "partitions started 0/s over the phase",
		"this process used", "member log: ", "join failed; retrying", "request lost",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q:\n%s", want, msg)
		}
	}
	t.Logf("the error:\n%s", msg)
}
