package foreign

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/kube"
	"github.com/tenure-dev/tenure/postgres"
)

// A foreignPartition is a record planted on a partition's key of group
// "fg" that no member wrote.
type foreignPartition struct {
	key    string
	kind   string // "foreign" or "malformed", as status names it
	reason string // a part of the reason status gives
	// released is the record release --force names: none for a grant
	// that is valid as a single key's, which it releases as one.
	released string
	never    bool // it never expires: no ttl_left_ms
	plant    func(t *testing.T) uint64
}

// A foreignMember is a membership record of group "fg" that no member
// wrote, planted before the members start.
type foreignMember struct {
	member string
	kind   string // "foreign" or "malformed"
	token  *uint64
	// freedBy is the partition key whose release --force removes the
	// record (the membership owns it); "" for release --force --member.
	freedBy string
}

// checkForeignPartitions plants parts (on some of the 5 partitions of
// group "fg"), starts two members, and checks that no member takes a
// planted record over, that status --partitions shows each as held by a
// foreign or malformed record (JSON and text, with the remedy), that the
// members say once why a partition waits and what removes the record, and
// that once release --force removes each, a member claims it with a
// greater token. (That the wait is over is logged at info level, which
// tenure run shows only with debug logging: see TestStrangerLogsOnce.)
// The membership records strays, planted already or by parts, must be
// no members: status lists them apart from the members, with the remedy,
// watch --key fg prints each as foreign_member, then foreign_member_gone,
// and release --force --member removes each (or the release of the
// partition it owns).
func checkForeignPartitions(t *testing.T, coord []string, parts []foreignPartition, strays []foreignMember) {
	tokens := map[string]uint64{}
	for _, p := range parts {
		tokens[p.key] = p.plant(t)
	}
	watch := e2e.StartProc(t, "watch-key", nil, append(append([]string{}, coord...), "watch", "--key", "fg", "--json")...)
	var members []*e2e.Proc
	for _, h := range []string{"a", "b"} {
		members = append(members, e2e.StartProc(t, h, nil, append(append([]string{}, coord...), "run", "--key", "fg", "--partitions", "5",
			"--ttl", "2s", "--holder", h, "--", "sleep", "1000")...))
	}
	// logged counts the members' log lines that say s.
	logged := func(s string) (n int) {
		for _, m := range members {
			n += strings.Count(m.Err.String(), s)
		}
		return n
	}
	status := func() cli.PartitionStatus {
		res := e2e.RunTenure(t, nil, append(append([]string{}, coord...), "status", "--key", "fg", "--partitions", "5", "--json")...)
		var st cli.PartitionStatus
		if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &st) != nil {
			t.Fatalf("%s: exit %d, output %q\n%s", res.Description, res.Code, res.Stdout, res.Stderr)
		}
		return st
	}
	var st cli.PartitionStatus
	e2e.WaitFor(t, 30*time.Second, "two members, partition 4 owned", func() bool {
		st = status()
		return len(st.Members) >= 2 && st.Partitions[4].Held && st.Partitions[4].Record == ""
	})
	// Several TTLs of claims later, no member has taken a planted record over.
	time.Sleep(3 * time.Second)
	st = status()
	byKey := map[string]int{}
	for i, r := range st.Partitions {
		byKey[r.Key] = i
	}
	for _, p := range parts {
		r := st.Partitions[byKey[p.key]]
		if !r.Held || r.Record != p.kind || !strings.Contains(r.Reason, p.reason) || r.Token != tokens[p.key] || (r.TTLLeftMS == nil) != p.never {
			t.Errorf("status --partitions: %s = %+v; want held by a %s record (%q) with token %d, ttl_left_ms absent = %v", p.key, r, p.kind, p.reason, tokens[p.key], p.never)
		}
	}
	if len(st.Members) != 2 {
		t.Errorf("status --partitions members = %+v; want a and b only", st.Members)
	}
	checkStrayStatus(t, st, strays)
	for _, m := range strays {
		e2e.WaitFor(t, 10*time.Second, "watch --key fg to show "+m.member+"'s membership record", func() bool {
			return hasEvent(watchEvents(t, watch), "fg", "foreign_member", m.member)
		})
	}
	res := e2e.RunTenure(t, nil, append(append([]string{}, coord...), "status", "--key", "fg", "--partitions", "5")...)
	for _, p := range parts {
		if !strings.Contains(res.Stdout, p.kind+" record") || !strings.Contains(res.Stdout, "tenure release --force --key "+p.key) {
			t.Errorf("status --partitions text does not name %s's %s record and its remedy:\n%s", p.key, p.kind, res.Stdout)
		}
	}
	for _, m := range strays {
		if m.freedBy != "" {
			continue // the note names the partition's release
		}
		if !strings.Contains(res.Stdout, m.kind+" membership record of member \""+m.member+"\"") || !strings.Contains(res.Stdout, "--key fg --member="+m.member) {
			t.Errorf("status --partitions text does not name %s's %s membership record and its remedy:\n%s", m.member, m.kind, res.Stdout)
		}
	}
	// The members say why the partitions wait: once, naming a record and
	// the command that removes it.
	e2e.WaitFor(t, 15*time.Second, "a member to say why a partition waits", func() bool {
		return logged(`ends or is removed" group=fg `) > 0
	})
	if n := logged(`ends or is removed" group=fg `); n > 2 || logged(`remedy="tenure release --force --key fg/`) != n {
		t.Errorf("the members said %d times why a partition waits, %d times with the remedy; want at most once each, with it", n, logged(`remedy="tenure release --force --key fg/`))
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, p := range parts {
		res := e2e.RunTenure(t, nil, append(append([]string{}, coord...), "release", "--key", p.key, "--force", "--json")...)
		var rel cli.ReleaseResult
		if err := json.Unmarshal([]byte(res.Stdout), &rel); err != nil || res.Code != 0 || !rel.Released || rel.Token != tokens[p.key] {
			t.Fatalf("release --force --key %s --json: exit %d, %q (%v); want released with token %d\n%s", p.key, res.Code, res.Stdout, err, tokens[p.key], res.Stderr)
		}
		if rel.Record != p.released {
			t.Errorf("release --force --key %s: record %q; want %q", p.key, rel.Record, p.released)
		}
	}
	for _, m := range strays {
		if m.freedBy != "" {
			continue
		}
		res := e2e.RunTenure(t, nil, append(append([]string{}, coord...), "release", "--key", "fg", "--member", m.member, "--force", "--json")...)
		var rel cli.ReleaseResult
		if err := json.Unmarshal([]byte(res.Stdout), &rel); err != nil || res.Code != 0 || !rel.Released || rel.Member != m.member || rel.Token != *m.token || rel.Record != m.kind {
			t.Fatalf("release --force --key fg --member %s --json: exit %d, %q (%v); want released, token %d, a %s record\n%s", m.member, res.Code, res.Stdout, err, *m.token, m.kind, res.Stderr)
		}
	}
	e2e.WaitFor(t, 30*time.Second, "members to own every partition", func() bool {
		st = status()
		return st.Unowned == 0 && len(st.Members) == 2
	})
	if len(st.ForeignMembers) != 0 {
		t.Errorf("status --partitions after release --member: foreign_members = %+v; want none", st.ForeignMembers)
	}
	for _, m := range strays {
		e2e.WaitFor(t, 10*time.Second, "watch --key fg to say "+m.member+"'s membership record is gone", func() bool {
			return hasEvent(watchEvents(t, watch), "fg", "foreign_member_gone", m.member)
		})
	}
	for _, r := range st.Partitions {
		if tok, ok := tokens[r.Key]; ok && (r.Record != "" || r.Token <= tok) {
			t.Errorf("after release --force, %s = %+v; want a member's with a token greater than %d", r.Key, r, tok)
		}
	}
}

// TestForeignPartitionsEtcd: partition keys that no member wrote (no
// lease, a value that is not a holder identity, a lease that is no
// membership's) hold their partitions until release --force removes
// them (see checkForeignPartitions). Membership keys that no member wrote
// (one that does not parse, one without a lease) are no members, and
// release --force --member removes them.
func TestForeignPartitionsEtcd(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	etcdc, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcdc.Close()
	put := func(key, value string, leaseSecs int64) func(t *testing.T) uint64 {
		return func(t *testing.T) uint64 {
			var opts []clientv3.OpOption
			if leaseSecs > 0 {
				l, err := etcdc.Grant(t.Context(), leaseSecs)
				if err != nil {
					t.Fatal(err)
				}
				opts = append(opts, clientv3.WithLease(l.ID))
			}
			resp, err := etcdc.Put(t.Context(), "/tenure/leader/"+key, value, opts...)
			if err != nil {
				t.Fatal(err)
			}
			return uint64(resp.Header.Revision)
		}
	}
	// Membership keys no member wrote: one that does not parse, and one
	// without a lease (as etcdctl put makes it) that would otherwise be a
	// third member, given partitions that nobody runs.
	nolease, ghost := put("#members/fg#nolease", "garbage", 0)(t), put("#members/fg#0000000000000000#ghost#00000000", "2 5", 0)(t)
	strays := []foreignMember{{"nolease", "malformed", &nolease, ""}, {"ghost#00000000", "foreign", &ghost, ""}}
	checkForeignPartitions(t, s.Coord, []foreignPartition{
		{"fg/0", "foreign", "no lease", "foreign", true, put("fg/0", "mallory#00000000", 0)},
		{"fg/1", "malformed", "not a holder identity", "malformed", false, put("fg/1", "bad\x01value", 600)},
		{"fg/2", "foreign", "no member's", "", false, put("fg/2", "mallory#00000000", 600)},
	}, strays)
}

// TestForeignPartitionsPostgres: leadership rows of partition keys that
// no member wrote (no holder_id, an expires_at of infinity, a grant that
// is no member's), and a partition row owned by a membership row that no
// member wrote as it stands (its expires_at pushed to infinity), hold
// their partitions until release --force removes them (see
// checkForeignPartitions); the planted membership is no member, and is
// listed as a foreign membership record.
func TestForeignPartitionsPostgres(t *testing.T) {
	t.Parallel()
	coord := e2e.PostgresCoord(t)
	c, err := postgres.Dial(t.Context(), coord[1])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exec := func(t *testing.T, sql string, args ...any) {
		t.Helper()
		if _, err := c.Pool().Exec(t.Context(), sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	row := func(key string, holder any, token int64, expires string) func(t *testing.T) uint64 {
		return func(t *testing.T) uint64 {
			exec(t, `INSERT INTO `+c.Table()+` (resource, holder_id, fencing_token, acquired_at, expires_at)
VALUES ($1, $2, $3, now(), `+expires+`)`, key, holder, token)
			return uint64(token)
		}
	}
	// A member that joined and claimed partition 3, whose membership row
	// someone then made never expire: a foreign membership record too,
	// removed with the partition.
	var epoch uint64
	stuck := func(t *testing.T) uint64 {
		m, err := c.JoinGroup(t.Context(), "fg", "mallory#00000000", 10*time.Second, 5)
		if err != nil {
			t.Fatal(err)
		}
		epoch = m.Epoch
		res, err := c.ClaimPartitions(t.Context(), m, []string{"3"})
		if err != nil || res[0].Err != nil {
			t.Fatalf("ClaimPartitions(3) = %+v, %v", res, err)
		}
		exec(t, `UPDATE cluster_leadership_members SET expires_at = 'infinity' WHERE epoch = $1`, int64(m.Epoch))
		return res[0].Grant.Token
	}
	checkForeignPartitions(t, coord, []foreignPartition{
		{"fg/0", "malformed", "no holder_id", "malformed", false, row("fg/0", nil, 7, "now() + interval '1 hour'")},
		{"fg/1", "foreign", "infinity", "foreign", true, row("fg/1", "mallory#00000000", 8, "'infinity'")},
		{"fg/2", "foreign", "no member's", "", false, row("fg/2", "mallory#00000000", 9, "now() + interval '10 minutes'")},
		{"fg/3", "foreign", "membership", "foreign", true, stuck},
	}, []foreignMember{{"mallory#00000000", "foreign", &epoch, "fg/3"}})
}

// TestForeignPartitionsKube: Leases of partition keys that no member
// wrote (a holder that is not a holder identity, a leaseDurationSeconds
// longer than a day, a single key's grant that is no member's) hold
// their partitions until release --force removes them (see
// checkForeignPartitions).
func TestForeignPartitionsKube(t *testing.T) {
	t.Parallel()
	s, ns, coord := e2e.KubeCoord(t)
	leases := s.Client(t).CoordinationV1().Leases(ns)
	lease := func(key, holder string, secs int32) func(t *testing.T) uint64 {
		return func(t *testing.T) uint64 {
			now := metav1.NewMicroTime(time.Now())
			l, err := leases.Create(t.Context(), &coordv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: kube.LeaseName(key), Annotations: map[string]string{kube.AnnotationKey: key}},
				Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rv, err := strconv.ParseUint(l.ResourceVersion, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return rv
		}
	}
	// A member that joined and claimed partition 3, whose membership
	// Lease someone then made last two days: a foreign membership record
	// too, removed with the partition.
	var membership uint64
	stuck := func(t *testing.T) uint64 {
		c, err := kube.New(s.Client(t), ns)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		m, err := c.JoinGroup(t.Context(), "fg", "mallory#00000000", 10*time.Second, 5)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.ClaimPartitions(t.Context(), m, []string{"3"})
		if err != nil || res[0].Err != nil {
			t.Fatalf("ClaimPartitions(3) = %+v, %v", res, err)
		}
		ls, err := leases.List(t.Context(), metav1.ListOptions{LabelSelector: kube.LabelRole + "=member"})
		if err != nil || len(ls.Items) != 1 {
			t.Fatalf("membership Leases: %v, %v; want mallory's", ls, err)
		}
		l := ls.Items[0]
		l.Spec.LeaseDurationSeconds = new(int32)
		*l.Spec.LeaseDurationSeconds = 2 * 86400
		u, err := leases.Update(t.Context(), &l, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if membership, err = strconv.ParseUint(u.ResourceVersion, 10, 64); err != nil {
			t.Fatal(err)
		}
		p, err := leases.Get(t.Context(), kube.LeaseName("fg/3"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rv, err := strconv.ParseUint(p.ResourceVersion, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return rv // the partition Lease's: the foreign record's token
	}
	checkForeignPartitions(t, coord, []foreignPartition{
		{"fg/0", "malformed", "not a holder identity", "malformed", false, lease("fg/0", "bad\x01value", 600)},
		{"fg/1", "foreign", "longer than tenure grants", "foreign", false, lease("fg/1", "mallory", 200000)},
		{"fg/2", "foreign", "no member's", "", false, lease("fg/2", "mallory", 600)},
		{"fg/3", "foreign", "membership", "foreign", false, stuck},
	}, []foreignMember{{"mallory#00000000", "foreign", &membership, "fg/3"}})
}

// checkStrayStatus checks that status --partitions (st) lists each of
// strays as a membership record of fg that no member wrote, with its
// token, and nothing else.
func checkStrayStatus(t *testing.T, st cli.PartitionStatus, strays []foreignMember) {
	t.Helper()
	if len(st.ForeignMembers) != len(strays) {
		t.Errorf("status --partitions foreign_members = %+v; want %d", st.ForeignMembers, len(strays))
	}
	for _, m := range strays {
		found := false
		for _, r := range st.ForeignMembers {
			found = found || r.Member == m.member && r.Token == *m.token && r.Record == m.kind && r.Reason != ""
		}
		if !found {
			t.Errorf("status --partitions foreign_members = %+v; want %s, a %s record with token %d", st.ForeignMembers, m.member, m.kind, *m.token)
		}
	}
}
