package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/monitor"
)

// jsonOutputs are the types behind every JSON output of tenure but its
// logs: status, status --partitions, watch, release, version, lease check,
// /status and /status/partitions.
var jsonOutputs = []any{
	KeyStatus{}, PartitionStatus{}, WatchLine{}, ReleaseResult{}, versionInfo{}, leaseCheckResult{},
	monitor.Status{}, monitor.PartitionPage{},
}

// jsonField is one field of a JSON output: its name and Go type, and the
// output type it was found in.
type jsonField struct {
	name, in string
	typ      reflect.Type
}

// jsonFields returns every field t writes as JSON, in embedded structs and
// in structs it holds (directly, by pointer or in slices), as
// encoding/json names them.
func jsonFields(t reflect.Type, in string, seen map[reflect.Type]bool) []jsonField {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || t == reflect.TypeFor[time.Time]() {
		return nil
	}
	seen[t] = true
	var out []jsonField
	for f := range t.Fields() {
		tag, ok := f.Tag.Lookup("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		if f.Anonymous && !ok {
			out = append(out, jsonFields(f.Type, in, seen)...)
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name, in + "." + f.Name, f.Type})
		out = append(out, jsonFields(f.Type, in, seen)...)
	}
	return out
}

// documentedFields returns the field names in the first column of
// docs/json.md's tables.
func documentedFields(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile("../../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	row := regexp.MustCompile("(?m)^\\| ([^|]+) \\|")
	name := regexp.MustCompile("`([a-z_]+)`")
	for _, r := range row.FindAllStringSubmatch(string(doc), -1) {
		for _, n := range name.FindAllStringSubmatch(r[1], -1) {
			names[n[1]] = true
		}
	}
	if len(names) < 20 {
		t.Fatalf("docs/json.md: found %d field names in its tables; the test reads the first column of each | table |", len(names))
	}
	return names
}

// checkVocabulary returns what is wrong with fields against the rules of
// docs/json.md: each documented; a duration in integer milliseconds under
// a name ending in _ms, never a time.Duration; the time left named
// ttl_left_ms and nothing else.
func checkVocabulary(fields []jsonField, documented map[string]bool) []string {
	var bad []string
	for _, f := range fields {
		t := f.typ
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case !documented[f.name]:
			bad = append(bad, f.in+` writes "`+f.name+`", which docs/json.md does not list`)
		case t == reflect.TypeFor[time.Duration]():
			bad = append(bad, f.in+` writes "`+f.name+`" from a time.Duration: nanoseconds, not milliseconds`)
		case strings.HasSuffix(f.name, "_ms") && !slices.Contains([]reflect.Kind{reflect.Int, reflect.Int64, reflect.Uint64}, t.Kind()):
			bad = append(bad, f.in+` writes "`+f.name+`" as `+t.String()+`: a _ms field is an integer`)
		case (strings.Contains(f.name, "left") || strings.Contains(f.name, "remaining")) && f.name != "ttl_left_ms":
			bad = append(bad, f.in+` writes "`+f.name+`": the time left on a lease is ttl_left_ms everywhere`)
		}
	}
	return bad
}

// TestJSONVocabulary: every field of every JSON output is one that
// docs/json.md lists, in the unit it says, and a JSON log writes each
// duration as integer milliseconds under its name with _ms added.
func TestJSONVocabulary(t *testing.T) {
	documented := documentedFields(t)
	seen := map[reflect.Type]bool{}
	var fields []jsonField
	for _, o := range jsonOutputs {
		ty := reflect.TypeOf(o)
		fields = append(fields, jsonFields(ty, ty.String(), seen)...)
	}
	for _, b := range checkVocabulary(fields, documented) {
		t.Error(b)
	}

	t.Run("logs", func(t *testing.T) {
		var buf bytes.Buffer
		g := &globalFlags{logLevel: "info", logFormat: "json"}
		log, err := g.logger(&buf, false)
		if err != nil {
			t.Fatal(err)
		}
		log.Warn("renewal failed", "took", 3001*time.Millisecond, "token", 42, "remaining", 6999500*time.Microsecond)
		var rec map[string]any
		if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
			t.Fatalf("log line %q: %v", buf.String(), err)
		}
		if rec["took_ms"] != 3001.0 || rec["remaining_ms"] != 6999.0 || rec["token"] != 42.0 {
			t.Errorf("log line %s: want took_ms 3001, remaining_ms 6999, token 42", buf.String())
		}
		for _, k := range []string{"took", "remaining"} {
			if _, ok := rec[k]; ok {
				t.Errorf("log line %s: the duration %q is written under its own name (in nanoseconds)", buf.String(), k)
			}
		}
	})
}

// TestJSONVocabularyCatches: the checks of TestJSONVocabulary report each
// kind of field they exist to stop.
func TestJSONVocabularyCatches(t *testing.T) {
	type planted struct {
		Undocumented string        `json:"lease_remaining"`
		Nanos        time.Duration `json:"ttl_ms"`
		Float        float64       `json:"down_ms"`
		Synonym      *int64        `json:"time_left_ms"`
	}
	documented := documentedFields(t)
	documented["lease_remaining"], documented["time_left_ms"] = true, true // each field caught for its own rule
	bad := checkVocabulary(jsonFields(reflect.TypeFor[planted](), "planted", map[reflect.Type]bool{}), documented)
	if len(bad) != 4 {
		t.Errorf("planted fields: %d reports, want 4 (one per field):\n%s", len(bad), strings.Join(bad, "\n"))
	}
	delete(documented, "lease_remaining")
	type undocumented struct {
		X string `json:"lease_remaining"`
	}
	if bad := checkVocabulary(jsonFields(reflect.TypeFor[undocumented](), "u", map[reflect.Type]bool{}), documented); len(bad) != 1 || !strings.Contains(bad[0], "does not list") {
		t.Errorf("an undocumented field: %q; want it reported as not listed", bad)
	}
}
