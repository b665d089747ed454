package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/tenure-dev/tenure/internal/display"
)

// WatchLine is one line of watch output (tenure watch --json).
type WatchLine struct {
	Time      string  `json:"time"`
	Event     string  `json:"event"`
	Key       string  `json:"key,omitempty"`
	Prefix    *string `json:"prefix,omitempty"`
	Held      *bool   `json:"held,omitempty"`
	Holder    string  `json:"holder,omitempty"`
	Instance  string  `json:"instance,omitempty"`
	Token     uint64  `json:"token,omitempty"`
	TTLMS     *int64  `json:"ttl_ms,omitempty"`
	TTLLeftMS *int64  `json:"ttl_left_ms,omitempty"`
	Error     string  `json:"error,omitempty"`
	DownMS    *int64  `json:"down_ms,omitempty"`
	// Record and Reason are as in status: a record tenure did not write
	// holds the key, or, on foreign_member lines, is a membership record
	// of group Key.
	Record string `json:"record,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Member names the member of a membership record that no member wrote
	// (events foreign_member and foreign_member_gone).
	Member string `json:"member,omitempty"`
	// Coordinator names the coordinator watched: "etcd at URL".
	Coordinator string `json:"coordinator,omitempty"`
}

// leaderLine describes a leadership event; left says the grant's TTL is the
// time left on its lease (a listing), not the TTL granted.
func leaderLine(rec recorded, left bool) WatchLine {
	ev := rec.LeaderEvent
	held := ev.Held
	l := WatchLine{Event: "no_leader", Key: ev.Key, Held: &held}
	if ev.Held {
		ms := ev.Grant.TTL.Milliseconds()
		l.Event, l.Token = "leader", ev.Grant.Token
		l.Holder, l.Instance = display.SplitIdentity(ev.Grant.Holder)
		if rec.foreign != nil {
			l.Record, l.Reason = recordKind(*rec.foreign), rec.foreign.Reason
			if rec.foreign.TTL >= 0 {
				l.TTLLeftMS = &ms
			}
			return l
		}
		if left {
			l.TTLLeftMS = &ms
		} else {
			l.TTLMS = &ms
		}
	}
	return l
}

const watchTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// watchPrinter writes watch lines as text or JSON.
type watchPrinter struct {
	w           io.Writer
	asJSON      bool
	enc         *json.Encoder
	coordinator string // put on every JSON line
}

func (p *watchPrinter) print(l WatchLine) error {
	l.Time = time.Now().Format(watchTimeFormat)
	if p.asJSON {
		l.Coordinator = p.coordinator
		return p.enc.Encode(l)
	}
	what := l.Key
	if l.Prefix != nil {
		what = fmt.Sprintf("prefix %q", *l.Prefix)
	}
	var detail string
	switch l.Event {
	case "leader":
		ttl := "ttl"
		ms := l.TTLMS
		if ms == nil {
			ttl, ms = "ttl left", l.TTLLeftMS
		}
		lease := "never ends"
		if ms != nil {
			lease = fmt.Sprintf("%s %s", ttl, roundTTL(time.Duration(*ms)*time.Millisecond))
		}
		detail = fmt.Sprintf("holder %s  token %d  %s", holderText(l.Holder, l.Instance), l.Token, lease)
		if l.Record != "" {
			detail = fmt.Sprintf("holder %s  token %d  %s  %s record (%s): free it with tenure release --force --key %s",
				holderText(strconv.Quote(l.Holder), l.Instance), l.Token, lease, l.Record, l.Reason, l.Key)
		}
	case "no_leader":
		detail = "no leader"
	case "unreachable":
		detail = "coordinator unreachable: " + l.Error
	case "reachable":
		detail = fmt.Sprintf("coordinator reachable again after %s", roundTTL(time.Duration(*l.DownMS)*time.Millisecond))
	case "foreign_member", "foreign_member_gone":
		detail = memberText(l)
	}
	_, err := fmt.Fprintf(p.w, "%s  %s  %s\n", l.Time, what, detail)
	return err
}
