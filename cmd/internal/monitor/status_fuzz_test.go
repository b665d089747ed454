package monitor_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tenure-dev/tenure/cmd/internal/monitor"
)

// statusSeed is a /status body with every kind of row.
const statusSeed = `{
  "instance": "web-1#3f2a9c01", "role": "leader", "prefix": "", "poll_ms": 500,
  "updated_at": "2026-12-02T04:19:04.123456789Z", "error": "etcd: deadline exceeded",
  "keys": [{"key": "jobs", "held": true, "holder": "web-1", "instance": "3f2a9c01", "token": 42,
    "ttl_left_ms": 8000, "ttl_ms": 10000, "since_renewal_ms": 2000, "not_renewing_after_ms": 3333, "renewing": true, "mine": true}],
  "transitions": [{"at": "2026-12-02T04:19:00+01:00", "key": "jobs", "holder": "web-1", "token": 42, "reason": "acquired", "source": "self"}],
  "groups": [{"group": "g", "partitions": 8, "owned": 6, "unowned": 2, "moved": 1, "move_window_ms": 60000, "members": 2, "cap": 4,
    "imbalance": 0.5, "by_member": [{"id": "a#1", "holder": "a", "instance": "1", "owned": 4, "mine": true, "ttl_ms": 60000, "renewing": true}]}],
  "partitions": [{"group": "g", "partition": 3, "name": "3", "key": "g/3", "held": true, "holder": "a", "token": 7,
    "mine": true, "unowned_ms": 10, "moved_ms": 20, "from": "b", "ttl_ms": 60000}]
}`

// FuzzStatusJSON: any body that decodes as a Status (what /status serves)
// or a PartitionPage (what /status/partitions serves) encodes to a body
// that decodes to the same value: no field is lost or renamed on the way.
func FuzzStatusJSON(f *testing.F) {
	f.Add([]byte(statusSeed))
	f.Add([]byte(`{"group":"g","total":1,"offset":0,"limit":50,"partitions":[{"partition":0,"ttl_left_ms":-1}]}`))
	f.Add([]byte(`{"keys":null,"transitions":[{}],"updated_at":"0001-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"poll_ms":1e3}`))
	f.Add([]byte(`{"keys":[{"ttl_ms":1,"TTLMs":2}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip[monitor.Status](t, b)
		roundTrip[monitor.PartitionPage](t, b)
	})
}

// roundTrip checks that b, when it decodes as a T, encodes to JSON that
// decodes to the same T and encodes the same again.
func roundTrip[T any](t *testing.T, b []byte) {
	var v T
	if json.Unmarshal(b, &v) != nil {
		return
	}
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%T decoded from %q does not encode: %v", v, b, err)
	}
	var w T
	if err := json.Unmarshal(enc, &w); err != nil {
		t.Fatalf("%T encoded as %s does not decode: %v", v, enc, err)
	}
	again, err := json.Marshal(w)
	if err != nil || !bytes.Equal(enc, again) {
		t.Fatalf("%T from %q encodes as\n%s\nwhich decodes and encodes as\n%s (%v)", v, b, enc, again, err)
	}
}
