package term

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/etcdbin"
)

// forgeScript is the command of TestCommandForgesNoRenewal: run by a
// tenure of an unprivileged user, it logs its start ("UPTIME start TOKEN
// PID LEASE_FILE", as toldScript does), finds tenure (its guard's parent),
// and writes a renewal of its own to each socket tenure holds (the guard's
// control channel among them) and each pipe it holds open for writing,
// through /proc/TENURE/fd: its own lease, read from the lease file, with a
// deadline ten minutes away. It notes "UPTIME forged N" for each it could
// open (in $LOG.note), then
// stops tenure (SIGSTOP), so that no true renewal follows, notes "UPTIME
// stopped TENURE",
// and asks `tenure lease check` again and again until it is killed,
// logging "BOOT check CODE TOKEN binary" (BOOT read before each check, in
// nanoseconds, rounded down to /proc/uptime's hundredth), as
// toldCheckLoop does.
const forgeScript = `read up _ < /proc/uptime
echo "$up start $TENURE_FENCING_TOKEN $$ $TENURE_LEASE_FILE" >> "$LOG"
trap '' TERM INT HUP
g=$(awk '{print $4}' /proc/$$/stat)
t=$(awk '{print $4}' /proc/$g/stat)
far=$(awk '{printf "%.0f", ($1 + 600) * 1e9}' /proc/uptime)
msg="{\"op\":\"lease\",\"lease\":$(sed "s/\"deadline_boot_ns\":[0-9]*/\"deadline_boot_ns\":$far/" "$TENURE_LEASE_FILE")}"
for fd in /proc/$t/fd/*; do
	case $(readlink "$fd" 2>/dev/null) in
	socket:*) ;;
	pipe:*) case $(awk '/^flags/ {print $2}' "/proc/$t/fdinfo/${fd##*/}" 2>/dev/null) in *1) ;; *) continue ;; esac ;;
	*) continue ;;
	esac
	if (echo "$msg" > "$fd") 2>/dev/null; then read up _ < /proc/uptime; echo "$up forged ${fd##*/}" >> "$LOG.note"; fi
done
kill -STOP $t
read up _ < /proc/uptime; echo "$up stopped $t" >> "$LOG.note"
while :; do
	read up _ < /proc/uptime
	"$TENURE" lease check > /dev/null 2>&1
	echo "${up%.*}${up#*.}0000000 check $? $TENURE_FENCING_TOKEN binary" >> "$LOG"
	sleep 0.05
done`

// TestCommandForgesNoRenewal: a command of tenure run, of the same user
// as tenure and not root, cannot renew its own term: it writes renewals
// with a deadline ten minutes away to tenure's end of its guard's control
// channel (through /proc/TENURE/fd), then stops tenure. Its guard must still
// kill its tree at the last deadline tenure sent, and lease check must
// stop saying "held", before a second tenure run's command starts. (Needs
// root: tenure runs as user 65534.)
func TestCommandForgesNoRenewal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("needs root, to run tenure as user 65534")
	}
	// The tenure binary and the log where user 65534 may reach them.
	dir, err := os.MkdirTemp("", "tenure-forge-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "tenure")
	copyFile(t, e2e.TenureBin, bin)
	log := filepath.Join(dir, "log")
	if err := os.WriteFile(log, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, log} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	coord := []string{"--endpoints", etcdbin.Start(t)}
	const key = "forged"

	a := exec.Command(bin, append(append([]string{}, coord...), "run", "--key", key, "--ttl", e2e.TTL.String(),
		"--", "sh", "-c", forgeScript)...)
	a.Env = append(e2e.CleanEnv(), "HOME="+dir, "LOG="+log, "TENURE="+bin)
	var aErr e2e.SyncBuffer
	a.Stdout, a.Stderr = io.Discard, &aErr
	a.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	a.WaitDelay = 10 * time.Second
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	aDone := make(chan struct{})
	go func() { a.Wait(); close(aDone) }()
	t.Cleanup(func() {
		_ = a.Process.Signal(syscall.SIGCONT)
		_ = a.Process.Kill()
		<-aDone
		if t.Failed() {
			t.Logf("tenure A (user 65534) stderr:\n%s\nlog:\n%s\nnotes:\n%s", aErr.String(), e2e.ReadFile(log), e2e.ReadFile(log+".note"))
		}
	})
	e2e.WaitFor(t, 20*time.Second+e2e.Slack, "A's command to stop its tenure", func() bool {
		return strings.Contains(e2e.ReadFile(log+".note"), " stopped ")
	})

	t.Logf("A's command's notes (a socket or pipe of tenure it wrote a renewal to: \"forged FD\"):\n%s", e2e.ReadFile(log+".note"))

	// A second tenure run: its command starts once A's lease has expired.
	e2e.StartProc(t, "run B", []string{"LOG=" + log}, append(append([]string{}, coord...), "run", "--key", key,
		"--ttl", e2e.TTL.String(), "--", "sh", "-c",
		`read up _ < /proc/uptime; echo "$up start $TENURE_FENCING_TOKEN $$ $TENURE_LEASE_FILE" >> "$LOG"; exec sleep 3600`)...)
	var bStart toldStart
	e2e.WaitFor(t, 2*e2e.TTL+e2e.Slack, "B's command to start", func() bool {
		l := readToldLog(t, log)
		var ok bool
		bStart, ok = l.after(l.starts[0].token)
		return ok
	})
	l := readToldLog(t, log)
	aToken, aPid := l.starts[0].token, l.starts[0].pid
	if e2e.Alive(aPid) {
		t.Errorf("A's command (token %d, pid %d) is alive after B's command (token %d) started", aToken, aPid, bStart.token)
	}
	time.Sleep(time.Second) // what A's tree does after B's start
	l = readToldLog(t, log)
	var ran []string
	for _, c := range l.checks {
		if c.token == aToken && c.at > bStart.at {
			ran = append(ran, c.at.Sub(bStart.at).Round(time.Millisecond).String())
		}
	}
	if len(ran) > 0 {
		t.Errorf("A's command (token %d) ran lease check %d time(s) after B's command (token %d) started, the last %s after",
			aToken, len(ran), bStart.token, ran[len(ran)-1])
	}
	for _, v := range l.violations() {
		t.Error(v)
	}
}

// copyFile copies the file at from to to, executable by everyone.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
