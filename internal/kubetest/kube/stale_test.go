package kube_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/kubetest"
	"github.com/tenure-dev/tenure/kube"
)

// TestPartitionsStaleReads: partition claims and checks are decided by
// writes, not by reads. Each member's coordinator reaches the API server
// through a transport that answers 30% of its GET and LIST requests with
// an older reply it recorded for the same URL (a cache behind the server,
// below client-go). Three members claim, check and release four
// partitions in a random order, one call at a time; after each call the
// true Lease, read past the stale transport, must agree: a claimed grant
// is the Lease's current owner and token, a partition a check keeps is
// still the member's with that token, and a partition's tokens never go
// back.
func TestPartitionsStaleReads(t *testing.T) {
	t.Parallel()
	s, cs := shared(t)
	ns := newNamespace(t, cs)
	const group = "stale"
	names := []string{"p0", "p1", "p2", "p3"}
	rng := rand.New(rand.NewPCG(27, 5))
	type member struct {
		c  *kube.Coordinator
		m  partition.Member
		gs map[string]tenure.Grant // by partition name
	}
	var members []*member
	var trs []*staleReads
	for i := range 3 {
		cfg := s.Config(kubetest.Admin)
		cfg.ContentType = "application/json"
		tr := &staleReads{rng: rand.New(rand.NewPCG(uint64(i), 1)), seen: map[string][]recorded{}}
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { tr.rt = rt; return tr })
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := newCoordinator(t, client, ns)
		m, err := c.JoinGroup(ctx(t), group, fmt.Sprintf("m%d#1", i), 60*time.Second, len(names))
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, &member{c: c, m: m, gs: map[string]tenure.Grant{}})
		trs = append(trs, tr)
	}
	// truth reads the partition's Lease past the stale transport, as a
	// coordinator of its own on the admin client reads it.
	reader := newCoordinator(t, cs, ns)
	truth := func(name string) (holder string, token uint64) {
		t.Helper()
		gs, err := reader.GroupPartitions(ctx(t), group)
		if err != nil {
			t.Fatalf("read partition %s: %v", name, err)
		}
		for _, g := range gs {
			if g.Key == partition.Key(group, name) {
				return g.Holder, g.Token
			}
		}
		return "", 0
	}
	last := map[string]uint64{} // the newest token granted of each partition
	for op := range 150 {
		mb := members[rng.IntN(len(members))]
		name := names[rng.IntN(len(names))]
		switch rng.IntN(3) {
		case 0: // claim
			res, err := mb.c.ClaimPartitions(ctx(t), mb.m, []string{name})
			if err != nil {
				t.Fatalf("op %d: %s claims %s: %v", op, mb.m.ID, name, err)
			}
			if res[0].Err != nil {
				if !errors.Is(res[0].Err, tenure.ErrHeld) {
					t.Fatalf("op %d: %s claims %s: %v", op, mb.m.ID, name, res[0].Err)
				}
				continue
			}
			g := res[0].Grant
			holder, token := truth(name)
			if holder != mb.m.ID || token != g.Token {
				t.Fatalf("op %d: %s claimed %s with token %d; the Lease holds %q with token %d", op, mb.m.ID, name, g.Token, holder, token)
			}
			if g.Token < last[name] {
				t.Fatalf("op %d: %s claimed %s with token %d, after token %d was granted: a token went back", op, mb.m.ID, name, g.Token, last[name])
			}
			last[name] = g.Token
			mb.gs[name] = g
		case 1: // check
			g, ok := mb.gs[name]
			if !ok {
				continue
			}
			lost, err := mb.c.CheckPartitions(ctx(t), mb.m, []tenure.Grant{g})
			if err != nil {
				t.Fatalf("op %d: %s checks %s: %v", op, mb.m.ID, name, err)
			}
			if len(lost) == 0 {
				if holder, token := truth(name); holder != mb.m.ID || token != g.Token {
					t.Fatalf("op %d: %s kept %s with token %d; the Lease holds %q with token %d", op, mb.m.ID, name, g.Token, holder, token)
				}
			} else {
				delete(mb.gs, name)
			}
		case 2: // release
			g, ok := mb.gs[name]
			if !ok {
				continue
			}
			if err := mb.c.ReleasePartitions(ctx(t), mb.m, []tenure.Grant{g}); err != nil {
				t.Fatalf("op %d: %s releases %s: %v", op, mb.m.ID, name, err)
			}
			delete(mb.gs, name)
		}
	}
	stale := 0
	for _, tr := range trs {
		stale += tr.served()
	}
	t.Logf("%d replies served stale", stale)
	if stale == 0 {
		t.Error("no reply was served stale: the test tested nothing")
	}
}

// staleReads answers a share of GET requests (reads and lists, not
// watches) with an older reply recorded for the same URL.
type staleReads struct {
	rt    http.RoundTripper
	mu    sync.Mutex
	rng   *rand.Rand
	seen  map[string][]recorded
	stale int
}

type recorded struct {
	code   int
	header http.Header
	body   []byte
}

func (s *staleReads) served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stale
}

func (s *staleReads) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.URL.Query().Get("watch") != "" {
		return s.rt.RoundTrip(req)
	}
	url := req.URL.String()
	s.mu.Lock()
	old := s.seen[url]
	if n := len(old); n > 1 && s.rng.Float64() < 0.3 {
		r := old[s.rng.IntN(n-1)] // older than the newest
		s.stale++
		s.mu.Unlock()
		return &http.Response{StatusCode: r.code, Header: r.header.Clone(), Body: io.NopCloser(bytes.NewReader(r.body)),
			ContentLength: int64(len(r.body)), Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
	}
	s.mu.Unlock()
	resp, err := s.rt.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.seen[url] = append(s.seen[url], recorded{code: resp.StatusCode, header: resp.Header.Clone(), body: b})
	s.mu.Unlock()
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	return resp, nil
}

// TestGrantTTLAsStored: a grant, a renewal and a membership report the
// leaseDurationSeconds the server stored, not the TTL asked for: here a
// transport caps it at 2s on its way to the server, as a mutating
// admission policy would.
func TestGrantTTLAsStored(t *testing.T) {
	t.Parallel()
	s, cs := shared(t)
	ns := newNamespace(t, cs)
	cfg := s.Config(kubetest.Admin)
	cfg.ContentType = "application/json"
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return capDuration{rt} })
	capped, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := newCoordinator(t, capped, ns)
	g, err := c.Acquire(ctx(t), "capped", "alice#1", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l, err := cs.CoordinationV1().Leases(ns).Get(ctx(t), "capped", metav1.GetOptions{})
	if err != nil || *l.Spec.LeaseDurationSeconds != 2 {
		t.Fatalf("the Lease as stored: %v, %v; want leaseDurationSeconds 2 (the cap works)", l, err)
	}
	if g.TTL != 2*time.Second {
		t.Fatalf("Acquire(5s) grant TTL = %s; want 2s, as stored", g.TTL)
	}
	if g, err = c.Renew(ctx(t), g); err != nil || g.TTL != 2*time.Second {
		t.Fatalf("Renew = %v, %v; want TTL 2s, as stored", g, err)
	}
	m, err := c.JoinGroup(ctx(t), "capped-group", "m#1", 5*time.Second, 1)
	if err != nil || m.TTL != 2*time.Second {
		t.Fatalf("JoinGroup(5s) = %v, %v; want TTL 2s, as stored", m, err)
	}
	if m, err = c.RenewMember(ctx(t), m); err != nil || m.TTL != 2*time.Second {
		t.Fatalf("RenewMember = %v, %v; want TTL 2s, as stored", m, err)
	}
}

// capDuration lowers every leaseDurationSeconds above 2 in a request body
// to 2.
type capDuration struct{ rt http.RoundTripper }

var durationField = regexp.MustCompile(`"leaseDurationSeconds":(\d+)`)

func (c capDuration) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || (req.Method != http.MethodPost && req.Method != http.MethodPut) {
		return c.rt.RoundTrip(req)
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	b = durationField.ReplaceAllFunc(b, func(m []byte) []byte {
		if n, _ := strconv.Atoi(string(durationField.FindSubmatch(m)[1])); n > 2 {
			return []byte(`"leaseDurationSeconds":2`)
		}
		return m
	})
	req = req.Clone(req.Context())
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return c.rt.RoundTrip(req)
}

// TestIdleMembershipDeleted: the membership Lease of a member that
// crashed owning nothing is deleted by the next claim of another member
// once it has expired on that member's clock, preconditioned on the
// version that expired; a live one is kept.
func TestIdleMembershipDeleted(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	live, crashed := newCoordinator(t, cs, ns), newCoordinator(t, cs, ns)
	const group = "idle"
	m, err := live.JoinGroup(ctx(t), group, "live#1", 30*time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crashed.JoinGroup(ctx(t), group, "crashed#1", time.Second, 1); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		t.Helper()
		list, err := cs.CoordinationV1().Leases(ns).List(ctx(t), metav1.ListOptions{LabelSelector: kube.LabelRole + "=member"})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	claim := func() {
		t.Helper()
		if res, err := live.ClaimPartitions(ctx(t), m, []string{"p0"}); err != nil || res[0].Err != nil {
			t.Fatalf("ClaimPartitions = %v, %v", res, err)
		}
	}
	claim() // sees the crashed membership live: keeps it
	if n := count(); n != 2 {
		t.Fatalf("membership Leases after a claim while both live = %d; want 2", n)
	}
	time.Sleep(1100 * time.Millisecond) // the crashed one's duration and the drift allowance
	claim()
	if n := count(); n != 1 {
		t.Fatalf("membership Leases after a claim once the crashed member's expired = %d; want 1 (the live member's)", n)
	}
}

// TestCheckWritesNothing: a check that confirms a partition with an
// unchanged update makes the API server write nothing: the partition's
// resourceVersion, and so every other member's wait, stays as it was.
func TestCheckWritesNothing(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	m, err := c.JoinGroup(ctx(t), "quiet", "m#1", 30*time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx(t), m, []string{"p0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions = %v, %v", res, err)
	}
	version := func() string {
		t.Helper()
		l, err := cs.CoordinationV1().Leases(ns).Get(ctx(t), kube.LeaseName(partition.Key("quiet", "p0")), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.ResourceVersion
	}
	var versions []string
	for range 3 { // the first check may bind the token in its annotation
		if lost, err := c.CheckPartitions(ctx(t), m, []tenure.Grant{res[0].Grant}); err != nil || len(lost) != 0 {
			t.Fatalf("CheckPartitions = %v, %v; want nothing lost", lost, err)
		}
		versions = append(versions, version())
	}
	if versions[1] != versions[2] {
		t.Fatalf("resourceVersions after three checks: %v; want the last two equal (a confirmation writes nothing)", versions)
	}
}
