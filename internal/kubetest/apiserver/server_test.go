package apiserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A server that cannot start is reported with the reason and the end of
// its log, and leaves no process or goroutine behind; a Config without
// what it needs is refused, naming the fields.
func TestStartFailures(t *testing.T) {
	if _, err := Start(t.Context(), Config{Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "Config.Binary") {
		t.Errorf("Start without a binary: %v; want an error naming Config.Binary", err)
	}
	dir := t.TempDir()
	exits := filepath.Join(dir, "exits")
	if err := os.WriteFile(exits, []byte("#!/bin/sh\necho cannot serve: $1 $2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Config{Binary: exits, Dir: dir, EtcdServers: []string{"http://127.0.0.1:1"}})
	if err == nil || !strings.Contains(err.Error(), "exited while starting") || !strings.Contains(err.Error(), "cannot serve: --etcd-servers http://127.0.0.1:1") {
		t.Errorf("Start of a process that exits: %v; want it to say so, with its log", err)
	}
	_, err = Start(context.Background(), Config{Binary: filepath.Join(dir, "absent"), Dir: dir, EtcdServers: []string{"http://127.0.0.1:1"}})
	if err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("Start of a missing binary: %v; want an error naming it", err)
	}
}
