package partition

import (
	"fmt"
	"sync"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/timerwait"
)

// overdue warns when a membership renewal is still unanswered a retry
// period after it was due, naming the request in flight, as the Elector
// does: a coordinator that stopped answering shows in the log at once,
// not only when the attempt times out or fails, a request timeout later.
type overdue struct {
	timer *time.Timer

	mu   sync.Mutex
	what string    // the request in flight
	sent time.Time // when it was sent
}

// watchRenewal starts watching the renewal of membership epoch, whose
// local deadline is deadline, due at due, whose first request, what, is
// about to be sent. Stop it once the renewal answered.
func (r *runner) watchRenewal(epoch uint64, deadline tenure.Instant, due time.Time, what string) *overdue {
	o := &overdue{what: what, sent: time.Now()}
	log := r.g.log
	o.timer = time.AfterFunc(timerwait.Delay(time.Until(due.Add(r.cfg.EffectiveRetryPeriod()))), func() {
		o.mu.Lock()
		what, sent := o.what, o.sent
		o.mu.Unlock()
		log.Warn("membership renewal overdue", "epoch", epoch, "cause",
			fmt.Sprintf("no reply from the coordinator to the %s sent %s ago (the renewal was due %s ago)",
				what, time.Since(sent).Round(time.Millisecond), time.Since(due).Round(time.Millisecond)),
			"remaining", deadline.Until().Round(time.Millisecond))
	})
	return o
}

// sending records that the renewal's next request, what, is being sent.
func (o *overdue) sending(what string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.what, o.sent = what, time.Now()
}

// stop ends the watch.
func (o *overdue) stop() { o.timer.Stop() }
