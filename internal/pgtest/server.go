// Package pgtest gives tests a real PostgreSQL server: the one named by
// TENURE_TEST_POSTGRES, or one it starts itself from the installed binaries
// (initdb, postgres) in a temporary directory and stops afterwards.
//
// A test binary starts at most one server, in TestMain:
//
//	func TestMain(m *testing.M) {
//		os.Exit(pgtest.Main(m, func(s *pgtest.Server, err error) { srv, srvErr = s, err }))
//	}
//
// and each test that needs it calls pgtest.Need(t, srv, srvErr), which skips
// the test when no server could be had, or fails it when
// TENURE_REQUIRE_POSTGRES=1 (CI). A test binary whose tests mostly need no
// server uses a Lazy instead: the first test that calls its Need starts it.
//
// Starting a server takes about a second:
//
//  1. find initdb and postgres: TENURE_PGTEST_BINDIR, else on PATH, else the
//     newest /usr/lib/postgresql/*/bin;
//  2. when running as root (PostgreSQL refuses to), run them as the user
//     named by TENURE_PGTEST_USER, default "postgres" (Debian's package
//     creates it), owning a 0700 directory under $TMPDIR, or /tmp when
//     that is not reachable by other users;
//  3. initdb -U postgres -A trust -E UTF8 --locale=C --no-sync;
//  4. run postgres as a child process on 127.0.0.1 and a free port, with its
//     unix socket in the directory, fsync off (committed data survives a
//     process crash in the page cache) and a parent-death signal, so that
//     it shuts down if the test process dies;
//  5. stop it with SIGINT (what pg_ctl stop -m fast sends) and remove the
//     directory. A directory left by a killed test process is removed by
//     the next start.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/internal/freeport"
)

// Environment variables read by Start and Need.
const (
	// EnvDSN names an existing server to use instead of starting one. Its
	// role must be allowed to create databases and roles.
	EnvDSN = "TENURE_TEST_POSTGRES"
	// EnvUser names the operating-system user that runs a started server
	// when the tests run as root. Default "postgres".
	EnvUser = "TENURE_PGTEST_USER"
	// EnvBinDir names the directory holding initdb and postgres. Default:
	// found on PATH, else the newest /usr/lib/postgresql/*/bin.
	EnvBinDir = "TENURE_PGTEST_BINDIR"
)

// superuser is the bootstrap superuser of a started server.
const superuser = "postgres"

// A Server is a PostgreSQL server for tests.
type Server struct {
	dsn      string // superuser DSN to database "postgres"
	external bool

	// Set only for a started server.
	dir, dataDir, sockDir, logPath, binDir string
	port                                   int
	cred                                   *syscall.Credential
	lock                                   *os.File // held while the server is ours

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	seq    int           // for unique database and role names
}

// DSN is a superuser connection string for the database "postgres".
func (s *Server) DSN() string { return s.dsn }

// External reports whether the server was named by TENURE_TEST_POSTGRES
// rather than started by Start; an external server cannot be restarted.
func (s *Server) External() bool { return s.external }

// Dir is the temporary directory of a started server ("" when external).
func (s *Server) Dir() string { return s.dir }

// Start returns the server named by TENURE_TEST_POSTGRES, after checking
// that it answers, or starts one from the installed binaries. ctx bounds
// the start.
func Start(ctx context.Context) (*Server, error) {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		s := &Server{dsn: dsn, external: true}
		if err := ping(ctx, dsn); err != nil {
			return nil, fmt.Errorf("pgtest: %s: %w", EnvDSN, err)
		}
		return s, nil
	}
	s := &Server{}
	if err := s.setUp(ctx); err != nil {
		if s.dir != "" {
			_ = os.RemoveAll(s.dir)
		}
		if s.lock != nil {
			s.lock.Close()
		}
		return nil, err
	}
	return s, nil
}

func (s *Server) setUp(ctx context.Context) error {
	bin, err := findBinDir()
	if err != nil {
		return err
	}
	s.binDir = bin
	if os.Geteuid() == 0 {
		if s.cred, err = serverCredential(); err != nil {
			return err
		}
	}
	if err := s.makeDirs(); err != nil {
		return err
	}
	initdb := s.command(ctx, "initdb", "-D", s.dataDir, "-U", superuser, "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: %s: %w\n%s", strings.Join(initdb.Args, " "), err, out)
	}
	s.port, err = freePort()
	if err != nil {
		return err
	}
	s.dsn = fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=postgres sslmode=disable connect_timeout=5", s.port, superuser)
	return s.start(ctx)
}

// serverCredential is the user a root process runs PostgreSQL as (which
// refuses to run as root): $TENURE_PGTEST_USER's (EnvUser), or postgres.
func serverCredential() (*syscall.Credential, error) {
	name := os.Getenv(EnvUser)
	if name == "" {
		name = "postgres"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and PostgreSQL will not: need the user %q to run it (create it with 'useradd --system %s', set %s, or set %s to a DSN): %w", name, name, EnvUser, EnvDSN, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// makeDirs makes the server's directory, locked by this process, with its
// socket directory, both owned by the server's user.
func (s *Server) makeDirs() error {
	// The directory must be reachable by the server's user: use /tmp when
	// TMPDIR is private to root.
	parent := os.TempDir()
	if s.cred != nil {
		if fi, err := os.Stat(parent); err != nil || fi.Mode().Perm()&0o001 == 0 {
			parent = "/tmp"
		}
	}
	sweep(parent)
	var err error
	s.dir, err = os.MkdirTemp(parent, dirPrefix)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	// The lock marks the directory in use for as long as this process
	// lives; sweep removes directories whose lock is free.
	s.lock, err = os.Create(filepath.Join(s.dir, lockName))
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if err := syscall.Flock(int(s.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("pgtest: lock %s: %w", s.dir, err)
	}
	s.dataDir = filepath.Join(s.dir, "data")
	s.sockDir = filepath.Join(s.dir, "sock")
	s.logPath = filepath.Join(s.dir, "postgres.log")
	if err := os.Mkdir(s.sockDir, 0o700); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if s.cred != nil {
		for _, p := range []string{s.dir, s.sockDir} {
			if err := os.Chown(p, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
				return fmt.Errorf("pgtest: %w", err)
			}
		}
	}
	return nil
}

// command builds an exec.Cmd for one of the server's binaries, run as the
// server's user.
func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.binDir, name), args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.dir, "LC_ALL=C", "TZ=UTC"}
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd
}

// start runs the postmaster as a child process and waits until it accepts
// connections.
func (s *Server) start(ctx context.Context) error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close()
	// Not CommandContext: ctx bounds the start, not the server's life.
	cmd := s.command(context.Background(), "postgres",
		"-D", s.dataDir,
		"-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+s.sockDir,
		"-c", "fsync=off",
		"-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB",
		"-c", "max_connections=200",
		"-c", "log_min_messages=warning",
		"-c", "log_min_error_statement=panic",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Own process group (a terminal's ^C reaches the test, which stops the
	// server itself), and an immediate shutdown if the test process dies
	// without stopping it (a test timeout's panic, a kill).
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	return s.awaitReady(ctx, cmd, exited)
}

// awaitReady waits until the server started as cmd answers, for 30s at
// most; it stops the server when it gives up.
func (s *Server) awaitReady(ctx context.Context, cmd *exec.Cmd, exited <-chan struct{}) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := ping(pctx, s.dsn)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("pgtest: postgres exited during start-up: %v\n%s", cmd.ProcessState, s.logTail())
		case <-ctx.Done():
			s.stop(syscall.SIGQUIT)
			return fmt.Errorf("pgtest: start postgres: %w\n%s", ctx.Err(), s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop(syscall.SIGQUIT)
			return fmt.Errorf("pgtest: postgres not ready after 30s: %v\n%s", err, s.logTail())
		}
	}
}

// logTail returns the end of the server's log, for error messages.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Stop shuts a started server down (a "fast" shutdown: what pg_ctl stop -m
// fast sends, SIGINT) and removes its directory. It does nothing for an
// external server. Stop is idempotent.
func (s *Server) Stop() error {
	if s.external {
		return nil
	}
	s.stop(syscall.SIGINT)
	err := os.RemoveAll(s.dir)
	if s.lock != nil {
		s.lock.Close()
	}
	return err
}

const (
	dirPrefix = "tenure-pgtest-"
	lockName  = "in-use.lock"
)

// sweep removes the directories of servers whose test process died without
// stopping them (killed, or a test timeout's panic): their lock is free and
// their postmaster is gone (it got SIGQUIT when its parent died).
func sweep(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, dirPrefix+"*"))
	for _, d := range dirs {
		f, err := os.Open(filepath.Join(d, lockName))
		if err != nil {
			continue // not ours, or still being set up
		}
		free := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
		if free && !postmasterAlive(d) {
			_ = os.RemoveAll(d)
		}
		f.Close()
	}
}

// postmasterAlive reports whether the postmaster.pid in dir's data
// directory names a live process.
func postmasterAlive(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

// stop signals the postmaster and waits for it to exit, escalating to
// SIGQUIT (immediate shutdown) and SIGKILL if it takes too long.
func (s *Server) stop(sig syscall.Signal) {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{sig, 30 * time.Second}, {syscall.SIGQUIT, 10 * time.Second}, {syscall.SIGKILL, time.Minute}} {
		_ = cmd.Process.Signal(step.sig)
		select {
		case <-exited:
			return
		case <-time.After(step.wait):
		}
	}
}

// RestartMode says how Restart stops the server.
type RestartMode int

const (
	// Fast is pg_ctl's -m fast: sessions are terminated, a checkpoint is
	// written, the server exits cleanly.
	Fast RestartMode = iota
	// Immediate is pg_ctl's -m immediate, a crash: every process exits at
	// once and the next start runs crash recovery.
	Immediate
)

// Restart stops a started server and starts it again on the same port and
// data directory. During a restart every connection is lost and new ones
// are refused. It fails for an external server.
func (s *Server) Restart(ctx context.Context, mode RestartMode) error {
	if s.external {
		return errors.New("pgtest: cannot restart an external server (" + EnvDSN + ")")
	}
	sig := syscall.SIGINT
	if mode == Immediate {
		sig = syscall.SIGQUIT
	}
	s.stop(sig)
	return s.start(ctx)
}

// ping connects to dsn and runs a trivial query.
func ping(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago, below
// the ephemeral range, so that a server restarted on it does not find it
// taken by an outgoing connection.
func freePort() (int, error) {
	ports, err := freeport.Ports(1)
	if err != nil {
		return 0, fmt.Errorf("pgtest: %w", err)
	}
	return ports[0], nil
}

// findBinDir finds the directory of the PostgreSQL server binaries.
func findBinDir() (string, error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		return d, nil
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("pgtest: no PostgreSQL server binaries (initdb, postgres) on PATH or in /usr/lib/postgresql/*/bin: install PostgreSQL (Debian: apt-get install postgresql), set %s, or set %s to a DSN", EnvBinDir, EnvDSN)
}

// pgVersion extracts N from /usr/lib/postgresql/N/bin.
func pgVersion(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}
