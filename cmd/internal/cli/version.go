package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure/cmd/internal/guard/guardbin"
)

// Set at link time by scripts/build.sh and scripts/release.sh:
//
//	-ldflags "-X github.com/tenure-dev/tenure/cmd/internal/cli.linkVersion=v0.1.0 -X github.com/tenure-dev/tenure/cmd/internal/cli.linkRevision=$(git rev-parse HEAD)"
//
// They take precedence over the build info, which records a version only
// for go install of a tagged module and a revision only for a build in a
// git checkout.
var linkVersion, linkRevision string

// versionInfo is what tenure version prints: the module version and the
// build's Go version and VCS revision, from the binary's build info, and
// which guard tenure run uses.
type versionInfo struct {
	Version  string `json:"version"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"revision_time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Guard    string `json:"guard,omitempty"` // guardEmbedded, guardSelf or guardNone
}

// The guard of tenure run in this binary (docs/build.md): its own program,
// embedded (a release build); tenure re-executed (a plain go build); none
// (not Linux: tenure run needs Linux).
const (
	guardEmbedded = "embedded"
	guardSelf     = "tenure re-executed"
	guardNone     = "none, tenure run needs Linux"
)

// guardKind says which guard tenure run uses in a binary built for goos
// that embeds a guard program or not.
func guardKind(goos string, embedded bool) string {
	switch {
	case goos != "linux":
		return guardNone
	case embedded:
		return guardEmbedded
	default:
		return guardSelf
	}
}

// readVersion reads the version set at link time, else the build info of
// this binary. A binary built from a checkout without them is version
// "(devel)".
func readVersion() versionInfo {
	bi, _ := debug.ReadBuildInfo()
	v := withLinked(versionFrom(bi), linkVersion, linkRevision)
	v.Guard = guardKind(runtime.GOOS, guardbin.Embedded())
	return v
}

// withLinked returns v with the version and revision set at link time, when
// set.
func withLinked(v versionInfo, version, revision string) versionInfo {
	if version != "" {
		v.Version = version
	}
	if revision != "" && revision != v.Revision {
		v.Revision, v.Time, v.Modified = revision, "", false
	}
	return v
}

// versionFrom reads build info bi (nil when the binary has none).
func versionFrom(bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Version: "(devel)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return v
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one-line form: "v1.2.3 (go1.26.0 linux/amd64, revision
// 0123abcd…, modified, guard: embedded)".
func (v versionInfo) String() string {
	s := fmt.Sprintf("%s (%s %s", v.Version, v.Go, v.Platform)
	if v.Revision != "" {
		s += ", revision " + v.Revision
		if v.Modified {
			s += ", modified"
		}
	}
	if v.Guard != "" {
		s += ", guard: " + v.Guard
	}
	return s + ")"
}

func newVersionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print tenure's version, the Go version it was built with and its VCS revision",
		Long: `version prints the module version of this binary, the Go version and
platform it was built for, the VCS revision it was built from when the
build recorded one, and the guard "tenure run" uses: "embedded" (the
guard's own program, in a release build), "tenure re-executed" (a plain
go build, docs/build.md), or none ("tenure run" needs Linux).
"tenure --version" prints the same line.

With --json, one object:

  {"version":"v1.2.3","go":"go1.26.0","platform":"linux/amd64","revision":"0123…","revision_time":"2026-01-02T15:04:05Z","guard":"embedded"}`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := readVersion()
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(v)
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "tenure %s\n", v)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return exitCodes(uses(cmd), exitCodesVersion)
}
