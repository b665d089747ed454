package foreign

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

// TestForeignPartitionsEtcd: partition keys of a running group of two
// members that no member wrote (no lease, a value that is not a holder
// identity, a lease that is no membership's) are never taken over by a
// member, are shown by status --partitions as held by a foreign or
// malformed record (JSON and text, with the remedy), and once release
// --force removes each, a member claims it with a greater token. A
// membership key that does not parse changes nothing.
func TestForeignPartitionsEtcd(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	etcdc, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcdc.Close()
	put := func(key, value string, leaseSecs int64) int64 {
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
		return resp.Header.Revision
	}
	// released is the record release --force names: none for a grant
	// that is valid as a single key's, which it releases as one.
	type shape struct{ kind, reason, released string }
	want := map[string]shape{
		"fg/0": {"foreign", "no lease", "foreign"},
		"fg/1": {"malformed", "not a holder identity", "malformed"},
		"fg/2": {"foreign", "no member's", ""},
	}
	tokens := map[string]uint64{
		"fg/0": uint64(put("fg/0", "mallory#00000000", 0)),
		"fg/1": uint64(put("fg/1", "bad\x01value", 600)),
		"fg/2": uint64(put("fg/2", "mallory#00000000", 600)),
	}
	put("#members/fg#nolease", "garbage", 0)

	for _, h := range []string{"a", "b"} {
		e2e.StartProc(t, h, nil, append(append([]string{}, s.Coord...), "run", "--key", "fg", "--partitions", "4",
			"--ttl", "2s", "--holder", h, "--", "sleep", "1000")...)
	}
	status := func() cli.PartitionStatus {
		res := e2e.RunTenure(t, nil, append(append([]string{}, s.Coord...), "status", "--key", "fg", "--partitions", "4", "--json")...)
		var st cli.PartitionStatus
		if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &st) != nil {
			t.Fatalf("%s: exit %d, output %q\n%s", res.Description, res.Code, res.Stdout, res.Stderr)
		}
		return st
	}
	var st cli.PartitionStatus
	e2e.WaitFor(t, 30*time.Second, "two members, partition 3 owned", func() bool {
		st = status()
		return len(st.Members) == 2 && st.Partitions[3].Held && st.Partitions[3].Record == ""
	})
	// Several TTLs of claims later, no member has taken a planted key over.
	time.Sleep(3 * time.Second)
	st = status()
	for _, r := range st.Partitions[:3] {
		w := want[r.Key]
		if !r.Held || r.Record != w.kind || !strings.Contains(r.Reason, w.reason) || r.Token != tokens[r.Key] || (r.TTLLeftMS == nil) != (r.Key == "fg/0") {
			t.Errorf("status --partitions: %s = %+v; want held by a %s record (%q) with token %d", r.Key, r, w.kind, w.reason, tokens[r.Key])
		}
	}
	if len(st.Members) != 2 {
		t.Errorf("status --partitions members = %+v; want a and b only", st.Members)
	}
	res := e2e.RunTenure(t, nil, append(append([]string{}, s.Coord...), "status", "--key", "fg", "--partitions", "4")...)
	for key, w := range want {
		if !strings.Contains(res.Stdout, w.kind+" record") || !strings.Contains(res.Stdout, "tenure release --force --key "+key) {
			t.Errorf("status --partitions text does not name %s's %s record and its remedy:\n%s", key, w.kind, res.Stdout)
		}
	}

	for key, w := range want {
		res := e2e.RunTenure(t, nil, append(append([]string{}, s.Coord...), "release", "--key", key, "--force", "--json")...)
		var rel cli.ReleaseResult
		if err := json.Unmarshal([]byte(res.Stdout), &rel); err != nil || res.Code != 0 || !rel.Released || rel.Token != tokens[key] {
			t.Fatalf("release --force --key %s --json: exit %d, %q (%v); want released with token %d\n%s", key, res.Code, res.Stdout, err, tokens[key], res.Stderr)
		}
		if rel.Record != w.released {
			t.Errorf("release --force --key %s: record %q; want %q", key, rel.Record, w.released)
		}
	}
	e2e.WaitFor(t, 30*time.Second, "members to own every partition", func() bool {
		st = status()
		return st.Unowned == 0
	})
	for _, r := range st.Partitions[:3] {
		if r.Record != "" || r.Token <= tokens[r.Key] {
			t.Errorf("after release --force, %s = %+v; want a member's with a token greater than %d", r.Key, r, tokens[r.Key])
		}
	}
}
