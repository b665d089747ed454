package foreign

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"syscall"
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

// A foreignShape is one shape of record a coordinator can hold on a key
// that tenure did not write as it stands, and that Acquire refuses.
type foreignShape struct {
	name  string
	key   string
	kind  string // "foreign" or "malformed", as status names it
	never bool   // it never expires: no ttl_left_ms
	plant func(t *testing.T)
}

// checkForeign checks, with shape planted on the coordinator coord names,
// that status (JSON and text) and watch name it, that tenure run waits
// for it and says so once, that release refuses it without --force and
// removes it with --force, and that tenure run then leads with a token
// greater than the record's.
func checkForeign(t *testing.T, coord []string, shape foreignShape) {
	key := shape.key
	remedy := "tenure release --force --key " + key

	st := e2e.StatusJSON[cli.KeyStatus](t, nil, append(coord, "--key", key)...)
	if len(st) != 1 || !st[0].Held || st[0].Record != shape.kind || st[0].Reason == "" || (st[0].TTLLeftMS == nil) != shape.never {
		t.Fatalf("status --key %s --json = %+v; want held by a %s record with a reason, ttl_left_ms absent = %v", key, st, shape.kind, shape.never)
	}
	token := st[0].Token
	t.Logf("status: %+v", st[0])

	res := e2e.RunTenure(t, nil, append(coord, "status", "--key", key)...)
	if res.Code != 0 || !strings.Contains(res.Stdout, shape.kind+" record") || !strings.Contains(res.Stdout, remedy) {
		t.Errorf("status --key %s: exit %d, output:\n%s\nwant it to name the %s record and %q", key, res.Code, res.Stdout, shape.kind, remedy)
	}

	w := e2e.StartProc(t, "watch", nil, append(coord, "watch", "--key", key, "--json")...)
	e2e.WaitFor(t, 10*time.Second, "watch's first line", func() bool { return len(e2e.Lines(w.Out.String())) >= 1 })
	w.Signal(t, syscall.SIGINT)
	w.Wait(t, 5*time.Second)
	var ev cli.WatchLine
	if err := json.Unmarshal([]byte(e2e.Lines(w.Out.String())[0]), &ev); err != nil || ev.Event != "leader" || ev.Record != shape.kind || ev.Token != token {
		t.Errorf("watch --key %s first line %q (%v); want a leader event naming the %s record with token %d", key, e2e.Lines(w.Out.String())[0], err, shape.kind, token)
	}

	run := e2e.StartProc(t, "run", nil, append(coord, "run", "--key", key, "--ttl", "2s", "--", "sh", "-c", `printf %s "$TENURE_FENCING_TOKEN"`)...)
	e2e.WaitFor(t, 15*time.Second, "tenure run to name the record", func() bool { return strings.Contains(run.Err.String(), remedy) })

	res = e2e.RunTenure(t, nil, append(coord, "release", "--key", key)...)
	if res.Code != cli.ExitError || !strings.Contains(res.Stderr, shape.kind+" record") {
		t.Errorf("release --key %s without --force: exit %d, stderr:\n%s\nwant %d naming the %s record", key, res.Code, res.Stderr, cli.ExitError, shape.kind)
	}
	res = e2e.RunTenure(t, nil, append(coord, "release", "--key", key, "--force", "--json")...)
	var rel cli.ReleaseResult
	if err := json.Unmarshal([]byte(res.Stdout), &rel); err != nil || res.Code != 0 || !rel.Released || rel.Record != shape.kind || rel.Token != token {
		t.Fatalf("release --force --key %s --json: exit %d, %q (%v); want released, record %s, token %d\n%s", key, res.Code, res.Stdout, err, shape.kind, token, res.Stderr)
	}

	if code := run.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("tenure run --key %s after the release: exit %d; want 0", key, code)
	}
	got, err := strconv.ParseUint(run.Out.String(), 10, 64)
	if err != nil || (token <= math.MaxInt64 && got <= token) {
		t.Errorf("tenure run's token %q; want greater than the record's %d", run.Out.String(), token)
	}
	if n := strings.Count(run.Err.String(), remedy); n != 1 {
		t.Errorf("tenure run named the remedy %d times; want once\n%s", n, run.Err.String())
	}
}

// checkForeignPrefix plants every shape and checks that status --prefix
// and watch --prefix show each shape's record, with its kind.
func checkForeignPrefix(t *testing.T, coord []string, prefix string, shapes []foreignShape) {
	t.Helper()
	for _, s := range shapes {
		s.plant(t)
	}
	got := e2e.StatusJSON[cli.KeyStatus](t, nil, append(coord, "--prefix", prefix)...)
	if len(got) != len(shapes) {
		t.Fatalf("status --prefix %s = %+v; want %d records", prefix, got, len(shapes))
	}
	byKey := map[string]cli.KeyStatus{}
	for _, s := range got {
		byKey[s.Key] = s
	}
	for _, s := range shapes {
		if g := byKey[s.key]; g.Record != s.kind || !g.Held {
			t.Errorf("status --prefix %s: %s = %+v; want a %s record", prefix, s.key, g, s.kind)
		}
	}

	w := e2e.StartProc(t, "watch", nil, append(coord, "watch", "--prefix", prefix, "--json")...)
	e2e.WaitFor(t, 10*time.Second, "a watch line per record", func() bool { return len(e2e.Lines(w.Out.String())) >= len(shapes) })
	w.Signal(t, syscall.SIGINT)
	w.Wait(t, 5*time.Second)
	for _, l := range e2e.Lines(w.Out.String())[:len(shapes)] {
		var ev cli.WatchLine
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Event != "leader" || ev.Record != byKey[ev.Key].Record {
			t.Errorf("watch --prefix %s line %q (%v); want a leader event naming the key's %s record", prefix, l, err, byKey[ev.Key].Record)
		}
	}
}

// TestForeignRecordsEtcd: every shape of etcd key under tenure's prefix
// that Acquire refuses but tenure did not write (no lease, a lease longer
// than a day, a value that is not a holder identity) is seen by status and
// watch, named by tenure run, and freed by release --force.
func TestForeignRecordsEtcd(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	etcdc, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcdc.Close()
	put := func(key, value string, leaseSecs int64) func(t *testing.T) {
		return func(t *testing.T) {
			var opts []clientv3.OpOption
			if leaseSecs > 0 {
				l, err := etcdc.Grant(t.Context(), leaseSecs)
				if err != nil {
					t.Fatal(err)
				}
				opts = append(opts, clientv3.WithLease(l.ID))
			}
			if _, err := etcdc.Put(t.Context(), "/tenure/leader/"+key, value, opts...); err != nil {
				t.Fatal(err)
			}
		}
	}
	shapes := []foreignShape{
		{"no lease", "fr/nolease", "foreign", true, put("fr/nolease", "mallory#00000000", 0)},
		{"empty value, no lease", "fr/empty", "malformed", true, put("fr/empty", "", 0)},
		{"a lease longer than a day", "fr/long", "foreign", false, put("fr/long", "mallory#00000000", 200000)},
		{"a control character on a lease", "fr/ctl", "malformed", false, put("fr/ctl", "bad\x01value", 600)},
	}
	checkForeignPrefix(t, s.Coord, "fr/", shapes)
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) { checkForeign(t, s.Coord, shape) })
	}
}

// TestForeignRecordsPostgres: every shape of live row in the leadership
// table that Acquire refuses but tenure did not write (no holder_id, a
// holder_id that is not a holder identity, a fencing_token that is not
// positive, an expires_at more than a day ahead or infinity) is seen by
// status and watch, named by tenure run, and freed by release --force,
// after which the token rule still gives a greater token (the planted
// infinity row's token is above the clock in µs).
func TestForeignRecordsPostgres(t *testing.T) {
	t.Parallel()
	coord := e2e.PostgresCoord(t)
	c, err := postgres.Dial(t.Context(), coord[1])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	row := func(key string, holder any, token int64, expires string) func(t *testing.T) {
		return func(t *testing.T) {
			_, err := c.Pool().Exec(t.Context(), `INSERT INTO `+c.Table()+` (resource, holder_id, fencing_token, acquired_at, expires_at)
VALUES ($1, $2, $3, now(), `+expires+`)
ON CONFLICT (resource) DO UPDATE SET holder_id = EXCLUDED.holder_id, fencing_token = EXCLUDED.fencing_token, expires_at = EXCLUDED.expires_at`,
				key, holder, token)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	shapes := []foreignShape{
		{"no holder_id", "fr/null", "malformed", false, row("fr/null", nil, 7, "now() + interval '1 hour'")},
		{"expires_at infinity", "fr/infinity", "foreign", true, row("fr/infinity", "mallory#00000000", 9e15, "'infinity'")},
		{"expires_at in two days", "fr/days", "foreign", false, row("fr/days", "mallory#00000000", 8, "now() + interval '2 days'")},
		{"empty holder_id", "fr/empty", "malformed", false, row("fr/empty", "", 9, "now() + interval '1 hour'")},
		{"fencing_token 0", "fr/zero", "malformed", false, row("fr/zero", "mallory#00000000", 0, "now() + interval '1 hour'")},
		{"negative fencing_token", "fr/negative", "malformed", false, row("fr/negative", "mallory#00000000", -5, "now() + interval '1 hour'")},
	}
	checkForeignPrefix(t, coord, "fr/", shapes)
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) { checkForeign(t, coord, shape) })
	}
}

// TestForeignRecordsKube: every shape of Lease of a key that Acquire
// refuses but no tenure or client-go grant wrote as it stands (a holder
// that is not a holder identity, no holder without tenure's release mark,
// a leaseDurationSeconds longer than a day, an annotation naming another
// key) is seen by status and watch, named by tenure run, and freed by
// release --force (a preconditioned delete). Its odd fields that tenure
// ignores (no acquireTime, a renewTime in the future) change nothing.
func TestForeignRecordsKube(t *testing.T) {
	t.Parallel()
	s, ns, coord := e2e.KubeCoord(t)
	leases := s.Client(t).CoordinationV1().Leases(ns)
	lease := func(key string, holder *string, secs int32, annotations map[string]string) func(t *testing.T) {
		return func(t *testing.T) {
			future := metav1.NewMicroTime(time.Now().Add(time.Hour))
			l := &coordv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: kube.LeaseName(key), Annotations: annotations},
				Spec:       coordv1.LeaseSpec{HolderIdentity: holder, LeaseDurationSeconds: &secs, RenewTime: &future},
			}
			if _, err := leases.Create(t.Context(), l, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	str := func(s string) *string { return &s }
	shapes := []foreignShape{
		{"a holder over 256 bytes", "fr-long-holder", "malformed", false, lease("fr-long-holder", str(strings.Repeat("m", 300)), 600, nil)},
		{"no holderIdentity", "fr-no-holder", "malformed", false, lease("fr-no-holder", nil, 3600, nil)},
		{"leaseDurationSeconds over a day", "fr-days", "foreign", false, lease("fr-days", str("mallory"), 200000, nil)},
		{"annotation naming another key", "fr-clash", "malformed", true, lease("fr-clash", str("mallory"), 600, map[string]string{kube.AnnotationKey: "other"})},
	}
	checkForeignPrefix(t, coord, "fr-", shapes)
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) { checkForeign(t, coord, shape) })
	}
}
