package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionFrom: the version line names the module version, the Go
// version and platform, and the VCS revision when the build recorded one.
func TestVersionFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "(devel) (" + versionFrom(nil).Go + " " + versionFrom(nil).Platform + ")"},
		{"release", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3 (go1.26.0 " + versionFrom(nil).Platform + ")"},
		{"from a work tree", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.0.0-20260102150405-0123456789ab+dirty"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-01-02T15:04:05Z"}, {Key: "vcs.modified", Value: "true"}}},
			"v0.0.0-20260102150405-0123456789ab+dirty (go1.26.0 " + versionFrom(nil).Platform + ", revision 0123456789abcdef, modified)"},
	} {
		v := versionFrom(tc.bi)
		if got := v.String(); got != tc.want {
			t.Errorf("%s: version = %q; want %q", tc.name, got, tc.want)
		}
	}
	v := versionFrom(&debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.time", Value: "2026-01-02T15:04:05Z"}}})
	if v.Time != "2026-01-02T15:04:05Z" {
		t.Errorf("revision_time = %q; want vcs.time", v.Time)
	}
}

// TestVersionLinked: the version and revision set at link time (release
// builds) take precedence over the build info.
func TestVersionLinked(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}
	v := withLinked(versionFrom(bi), "v0.1.0", "fedcba9876543210")
	if want := "v0.1.0 (go1.26.0 " + v.Platform + ", revision fedcba9876543210)"; v.String() != want {
		t.Errorf("linked version = %q; want %q", v.String(), want)
	}
	if v := withLinked(versionFrom(bi), "", ""); v.Version != "(devel)" || v.Revision != "0123456789abcdef" || !v.Modified {
		t.Errorf("without linked values = %+v; want the build info's", v)
	}
}

// TestVersionGuard: the version line says which guard tenure run uses:
// the embedded program, tenure re-executed, or none off Linux.
func TestVersionGuard(t *testing.T) {
	for _, tc := range []struct {
		goos     string
		embedded bool
		want     string
	}{
		{"linux", true, "guard: embedded"},
		{"linux", false, "guard: tenure re-executed"},
		{"darwin", false, "guard: none, tenure run needs Linux"},
	} {
		v := versionFrom(nil)
		v.Guard = guardKind(tc.goos, tc.embedded)
		if got := v.String(); !strings.HasSuffix(got, ", "+tc.want+")") {
			t.Errorf("%s, embedded %v: version = %q; want it to end with %q", tc.goos, tc.embedded, got, tc.want)
		}
	}
}
