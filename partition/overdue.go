package partition

import (
	"fmt"
	"time"

	"github.com/tenure-dev/tenure"

	"github.com/tenure-dev/tenure/internal/timerwait"
	"github.com/tenure-dev/tenure/internal/timing"
)

// watchRenewal warns when the renewal of membership epoch, whose terms'
// local deadline is deadline, due at due and about to be sent, is still
// unanswered a retry period after it was due, as the Elector does: a
// coordinator that stopped answering shows in the log at once, not only
// when the attempt times out or fails, a request timeout later. Stop the
// timer it returns once the renewal answered.
func (r *runner) watchRenewal(epoch uint64, deadline tenure.Instant, due time.Time) *time.Timer {
	sent, log := time.Now(), r.g.log
	return time.AfterFunc(timerwait.Delay(time.Until(due.Add(timing.RetryPeriod(r.cfg.TTL, r.cfg.RetryPeriod)))), func() {
		log.Warn("membership renewal overdue", "epoch", epoch, "cause",
			fmt.Sprintf("no reply from the coordinator to the membership renewal sent %s ago (the renewal was due %s ago)",
				time.Since(sent).Round(time.Millisecond), time.Since(due).Round(time.Millisecond)),
			"remaining", deadline.Until().Round(time.Millisecond))
	})
}
