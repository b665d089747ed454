// heartbeat MODE OUT: the command starts a writer, in a process group of
// its own, that writes the CLOCK_BOOTTIME instant (in ns, as 20 digits) at
// the start of OUT.beat every 200 µs, writes its pid to OUT once it is in
// place, and goes on until killed (or for 60 s, should nobody kill it).
// At SIGTERM, the writer creates OUT.term and exits.
//   plain       the writer just writes
//   contimer    a POSIX timer of the writer's sends it SIGCONT every
//               millisecond: no SIGSTOP holds it for longer
//   contimerwide as contimer, after the writer forked $HEARTBEAT_WIDE
//               (3000 if unset) children that sleep (pause): a tree the
//               guard takes long to read
//   contimerlast as contimerwide, but the writer is the last process
//               of its group to be forked: the process that forked the
//               sleepers forks it, and sleeps too (the group's leader)
//   lastplain   as contimerlast, but the writer has no timer: it just
//               writes
//   leaderless  as contimerlast, but the group holds no leader: the
//               group's leader forks a process and exits (the command,
//               which ignores SIGCHLD, reaps it at once); that process
//               forks the sleepers and the writer, which stay in the
//               leaderless group, and moves to a group of its own
//   leaderlessplain as leaderless, but the writer has no timer: it
//               just writes
//   hopgroup    as contimerlast, but once the lease file says the
//               deadline is less than 1 s away (after the guard's
//               scout on that lease), the group's leader forks a process
//               that starts a group of its own, and every process of the
//               leader's group (the leader and the writer among them)
//               moves to that group (SIGUSR1, whose handler does it); the
//               new group's id goes to OUT.hop
//   reaped      as plain, but the command ignores SIGCHLD: the writer,
//               killed, is reaped at once, and its pid is free again
//   joingroup   as plain, but the command first joins process group
//               $HEARTBEAT_JOIN (one of its session's)
//   guardgroup  the writer joins the guard's process group (the command
//               runs in the guard's session) instead of one of its own
//   stopguard   the writer first stops the guard (the command's parent)
//               with SIGSTOP
//   traceguard  the writer first stops every thread of the guard with
//               ptrace (PTRACE_SEIZE, PTRACE_INTERRUPT): SIGCONT does not
//               resume a thread in a ptrace stop
//   forgelease  the writer takes (pidfd_getfd) every socket of the
//               guard's parent, tenure, its end of the guard's control
//               channel among them, and sends on each, every 50 ms, a
//               lease whose deadline is 2 s away
//   forgereport the writer takes (pidfd_getfd) the guard's end of its
//               report channel, its file descriptor 4, and 300 ms after it
//               began to write, reports the command exited there
//   termguard   the writer ignores SIGTERM and, once the lease file
//               (TENURE_LEASE_FILE) says the deadline is less than 10 s
//               away (the guard has applied the test's short lease, not
//               just the minute-long one the command started under), sends
//               the guard SIGTERM every 50 ms; it creates OUT.sigterm when
//               it sends the first
//   groupsplain as lastplain, but each sleeper, and the writer, starts a
//               process group of its own: the writer's is the last of
//               3,001 groups
//   threadscout as lastplain, but the group's leader first forks a
//               process with $HEARTBEAT_THREADS (8000 if unset) threads
//               that sleep, in the group: a tree whose every thread's
//               children list the guard reads when it scouts
//   dodgegroups as groupsplain, with the threads of threadscout first
//               (in the leader's group), but the writer moves into the
//               group of the sleeper forked two thirds of the way through
//               once that sleeper is stopped (the freeze has signalled
//               its group); with $HEARTBEAT_DODGE=0 it stays in its own
//   latewide    the writer writes until the lease file says the deadline
//               is less than 24 s away (the guard has applied the test's
//               lease, 27 s long, not just the minute-long one the
//               command started under, and scouted on it 3 s before),
//               then forks $HEARTBEAT_WIDE sleepers (3000 if
//               unset; in its group) and a new writer, which starts a
//               process group of its own, writes its pid to OUT.late and
//               writes on in its place; the old writer sleeps: the tree
//               is wide only after the last renewal, and the guard
//               scouted neither the sleepers nor the new writer
//   widenew     as latewide, but the sleepers are forked before the
//               writer's first beat (the tree is wide at the last
//               renewal): only the new writer comes after it
//   userns      the writer is pid 2 of a new user and PID namespace whose
//               init forks it and waits; OUT names the namespace's parent
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *out;

static long long boot(void) {
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// reportTo writes this process's pid, as /proc (the guard's) shows it, to
// path.
static void reportTo(const char *path) {
	char self[64] = {0}, tmp[4096];
	if (readlink("/proc/self", self, sizeof self - 1) < 0)
		_exit(1);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, self, strlen(self)) < 0)
		_exit(1);
	close(fd);
	rename(tmp, path);
}

// report writes this process's pid to out.
static void report(void) { reportTo(out); }

static int beatfd;
static int forgefds[64];  // tenure's sockets (forgelease)
static int nforge;
static int reportfd = -1; // the guard's end of the report channel (forgereport)
static pid_t termguard;   // the guard, sent SIGTERM (termguard)
static char termpath[4096];

// leaseLeft returns how long until the deadline the lease file names, in
// ns, or -1 if it names none.
static long long leaseLeft(void) {
	const char *path = getenv("TENURE_LEASE_FILE");
	char buf[4096];
	int fd = path == NULL ? -1 : open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	const char *key = "\"deadline_boot_ns\":";
	char *at = strstr(buf, key);
	return at == NULL ? -1 : strtoll(at + strlen(key), NULL, 10) - boot();
}

// leaseWithin reports whether the lease file says the deadline is less
// than ns away.
static int leaseWithin(long long ns) {
	long long left = leaseLeft();
	return left >= 0 && left < ns;
}

static volatile int *hopTo; // shared: the group to move to (hopgroup)

static void onHop(int sig) {
	setpgid(0, *hopTo);
}

static void onTerm(int sig) {
	close(open(termpath, O_WRONLY | O_CREAT, 0644));
	_exit(0);
}

static pid_t dodgeOf; // dodgegroups: the leader of the group the writer dodges into

// afterComm reads process pid's stat line from /proc into buf (size
// bytes) and returns what follows its "(comm)", or NULL.
static const char *afterComm(pid_t pid, char *buf, size_t size) {
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, size - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	char *at = strrchr(buf, ')');
	return at != NULL ? at + 1 : NULL;
}

// stateOf returns the state letter of process pid in /proc, or 0.
static char stateOf(pid_t pid) {
	char buf[4096];
	const char *at = afterComm(pid, buf, sizeof buf);
	return at != NULL && at[0] == ' ' ? at[1] : 0;
}

// dodge moves the writer (dodgegroups) into dodgeOf's group once that
// process is stopped (the freeze has signalled its group).
static void dodge(void) {
	if (stateOf(dodgeOf) == 'T') {
		if (setpgid(0, dodgeOf) != 0)
			_exit(1);
		dodgeOf = 0;
	}
}

static int late;         // hand the beat over once the lease is near (latewide, widenew)
static int lateSleepers; // fork the sleepers then too (latewide)

static int ownGroups; // each sleeper starts a process group of its own (groupsplain)

static pid_t forkSleepers(void);

// handOff forks, for latewide, the sleepers, then a new writer in a
// process group of its own, which returns (to write on); this process
// sleeps.
static void handOff(void) {
	late = 0;
	if (lateSleepers)
		forkSleepers();
	pid_t c = fork();
	if (c < 0)
		_exit(1);
	if (c > 0)
		for (;;)
			pause();
	if (setpgid(0, 0) != 0)
		_exit(1);
	char path[4096];
	snprintf(path, sizeof path, "%s.late", out);
	reportTo(path);
}

// beat writes the boot clock to OUT.beat (beatfd) until 60 s have passed.
static void beat(void) {
	char buf[32], msg[512];
	long long began = boot(), nextTerm = 0, nextLate = 0;
	int termed = 0;
	for (long long end = began + 60000000000LL, n = 0; boot() < end; n++) {
		if (nforge > 0 && n % 250 == 0) {
			int m = snprintf(msg, sizeof msg,
			    "{\"op\":\"lease\",\"lease\":{\"key\":\"k\",\"holder\":\"h\",\"token\":1,"
			    "\"deadline_boot_ns\":%lld,\"ttl_ms\":2000,\"live\":true}}\n",
			    boot() + 2000000000LL);
			// Not every socket is the control channel: no waiting, no SIGPIPE.
			for (int i = 0; i < nforge; i++)
				send(forgefds[i], msg, m, MSG_DONTWAIT | MSG_NOSIGNAL);
		}
		if (termguard > 0 && boot() >= nextTerm) {
			if (termed || leaseWithin(10000000000LL)) {
				kill(termguard, SIGTERM);
				if (!termed) {
					char sent[4096];
					snprintf(sent, sizeof sent, "%s.sigterm", out);
					close(open(sent, O_WRONLY | O_CREAT, 0644));
					termed = 1;
				}
			}
			nextTerm = boot() + (termed ? 50000000LL : 10000000LL);
		}
		if (dodgeOf > 0)
			dodge();
		if (late && boot() >= nextLate) {
			if (leaseWithin(24000000000LL))
				handOff();
			nextLate = boot() + 10000000LL;
		}
		if (reportfd >= 0 && boot() > began + 300000000LL) {
			const char *r = "{\"exited\":true,\"code\":0,\"status\":\"exit status 0\"}\n";
			if (write(reportfd, r, strlen(r)) < 0)
				_exit(1);
			close(reportfd);
			reportfd = -1;
		}
		int n = snprintf(buf, sizeof buf, "%020lld\n", boot());
		if (pwrite(beatfd, buf, n, 0) != n)
			_exit(1);
		usleep(200);
	}
	_exit(0);
}

static void onCont(int sig) {}

// contimer arms a timer that sends this process SIGCONT every millisecond.
// SIGCONT gets a handler: the kernel parks a timer whose signal is ignored
// (SIGCONT's default) after its first expiry.
static void contimer(void) {
	struct sigaction sa = {.sa_handler = onCont, .sa_flags = SA_RESTART};
	if (sigaction(SIGCONT, &sa, NULL) != 0)
		_exit(1);
	struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGCONT};
	timer_t t;
	struct itimerspec every = {{0, 1000000}, {0, 1000000}};
	if (timer_create(CLOCK_MONOTONIC, &ev, &t) != 0 || timer_settime(t, 0, &every, NULL) != 0)
		_exit(1);
}

// traceguard stops every thread of process g with ptrace; it goes over
// them twice, for threads started meanwhile.
static void traceguard(pid_t g) {
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/task", g);
	for (int pass = 0; pass < 2; pass++) {
		DIR *d = opendir(dir);
		if (d == NULL)
			_exit(1);
		for (struct dirent *e; (e = readdir(d)) != NULL;) {
			pid_t tid = atoi(e->d_name);
			if (tid > 0 && ptrace(PTRACE_SEIZE, tid, 0, 0) == 0)
				ptrace(PTRACE_INTERRUPT, tid, 0, 0);
		}
		closedir(d);
	}
}

// take returns a copy of file descriptor fd of process pid (pidfd_getfd),
// or -1.
static int take(pid_t pid, int fd) {
	int pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -1;
	int got = syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	close(pidfd);
	return got;
}

// takeSockets takes every socket of process pid into forgefds.
static void takeSockets(pid_t pid) {
	char dir[64], link[4096], target[64];
	snprintf(dir, sizeof dir, "/proc/%d/fd", pid);
	DIR *d = opendir(dir);
	if (d == NULL)
		_exit(1);
	for (struct dirent *e; (e = readdir(d)) != NULL && nforge < 64;) {
		snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
		ssize_t n = readlink(link, target, sizeof target - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		int fd;
		if (strncmp(target, "socket:", 7) == 0 && (fd = take(pid, atoi(e->d_name))) >= 0)
			forgefds[nforge++] = fd;
	}
	closedir(d);
}

// parent returns the parent of process pid, or -1.
static pid_t parent(pid_t pid) {
	char buf[4096];
	const char *at = afterComm(pid, buf, sizeof buf);
	int ppid;
	return at != NULL && sscanf(at, " %*c %d", &ppid) == 1 ? ppid : -1;
}

// forkSleepers forks $HEARTBEAT_WIDE (3000 if unset) children that sleep
// (pause) until killed: a tree the guard takes long to read. It returns
// the pid of the one forked two thirds of the way through.
static pid_t forkSleepers(void) {
	const char *wide = getenv("HEARTBEAT_WIDE");
	pid_t at = 0;
	for (int i = 0, n = wide != NULL ? atoi(wide) : 3000; i < n; i++) {
		pid_t c = fork();
		if (c < 0)
			_exit(1);
		if (i == n * 2 / 3)
			at = c;
		if (c == 0) {
			if (ownGroups && setpgid(0, 0) != 0)
				_exit(1);
			for (;;)
				pause();
		}
	}
	return at;
}

static void *pauseThread(void *arg) {
	for (;;)
		pause();
	return NULL;
}

// forkThreads forks a process that starts $HEARTBEAT_THREADS (8000 if
// unset) threads that sleep, and returns once they are all up.
static void forkThreads(void) {
	const char *env = getenv("HEARTBEAT_THREADS");
	int n = env != NULL ? atoi(env) : 8000, up[2];
	if (pipe(up) != 0)
		_exit(1);
	pid_t c = fork();
	if (c < 0)
		_exit(1);
	if (c == 0) {
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 1 << 16);
		for (int i = 0; i < n; i++) {
			pthread_t t;
			if (pthread_create(&t, &attr, pauseThread, NULL) != 0)
				_exit(1);
		}
		if (write(up[1], "", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	char b;
	if (read(up[0], &b, 1) != 1)
		_exit(1);
	close(up[0]);
	close(up[1]);
}

static char stack[1 << 16];

static int nsinit(void *arg) {
	if (fork() == 0)
		beat();
	for (;;)
		wait(NULL);
	return 0;
}

int main(int argc, char **argv) {
	if (argc != 3)
		return 2;
	const char *mode = argv[1];
	out = argv[2];
	pid_t guard = getppid();
	char path[4096];
	snprintf(path, sizeof path, "%s.beat", out);
	if ((beatfd = open(path, O_WRONLY | O_CREAT, 0644)) < 0)
		return 1;
	snprintf(termpath, sizeof termpath, "%s.term", out);
	int leaderless = strcmp(mode, "leaderless") == 0 || strcmp(mode, "leaderlessplain") == 0;
	if (leaderless || strcmp(mode, "reaped") == 0)
		signal(SIGCHLD, SIG_IGN);
	if (strcmp(mode, "joingroup") == 0) {
		const char *join = getenv("HEARTBEAT_JOIN");
		if (join == NULL || setpgid(0, atoi(join)) != 0)
			return 1;
	}
	if (fork() == 0) {
		signal(SIGCHLD, SIG_DFL);
		struct sigaction sa = {.sa_handler = onTerm};
		if (sigaction(SIGTERM, &sa, NULL) != 0)
			_exit(1);
		if (setpgid(0, strcmp(mode, "guardgroup") == 0 ? getpgid(guard) : 0) != 0)
			_exit(1);
		if (strcmp(mode, "plain") == 0 || strcmp(mode, "reaped") == 0 || strcmp(mode, "joingroup") == 0) {
		} else if (leaderless) {
			pid_t c = fork();
			if (c < 0)
				_exit(1);
			if (c > 0)
				_exit(0); // the leader: gone, reaped by the command
			forkSleepers();
			c = fork();
			if (c < 0)
				_exit(1);
			if (c > 0) {
				if (setpgid(0, 0) != 0)
					_exit(1);
				for (;;)
					pause();
			}
			if (strcmp(mode, "leaderless") == 0)
				contimer();
		} else if (strcmp(mode, "guardgroup") == 0) {
		} else if (strcmp(mode, "latewide") == 0 || strcmp(mode, "widenew") == 0) {
			late = 1;
			if (strcmp(mode, "latewide") == 0)
				lateSleepers = 1;
			else
				forkSleepers();
		} else if (strcmp(mode, "contimer") == 0) {
			contimer();
		} else if (strcmp(mode, "contimerwide") == 0 || strcmp(mode, "contimerlast") == 0 || strcmp(mode, "hopgroup") == 0 ||
		    strcmp(mode, "lastplain") == 0 || strcmp(mode, "groupsplain") == 0 || strcmp(mode, "threadscout") == 0 ||
		    strcmp(mode, "dodgegroups") == 0) {
			int hop = strcmp(mode, "hopgroup") == 0, dodging = strcmp(mode, "dodgegroups") == 0;
			int groups = strcmp(mode, "groupsplain") == 0, threads = strcmp(mode, "threadscout") == 0;
			int plain = groups || threads || dodging || strcmp(mode, "lastplain") == 0;
			int last = hop || plain || strcmp(mode, "contimerlast") == 0;
			ownGroups = groups || dodging;
			if (threads || dodging)
				forkThreads();
			if (hop) {
				hopTo = mmap(NULL, sizeof *hopTo, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
				struct sigaction sa = {.sa_handler = onHop, .sa_flags = SA_RESTART};
				if (hopTo == MAP_FAILED || sigaction(SIGUSR1, &sa, NULL) != 0)
					_exit(1);
			}
			pid_t twoThirds = forkSleepers();
			if (last) {
				pid_t c = fork();
				if (c < 0)
					_exit(1);
				if (c > 0 && hop) {
					for (long long left; (left = leaseLeft()) < 0 || left > 1000000000LL;)
						usleep(5000);
					pid_t g = fork();
					if (g < 0)
						_exit(1);
					if (g == 0) {
						setpgid(0, 0);
						for (;;)
							pause();
					}
					if (setpgid(g, g) != 0 && getpgid(g) != g)
						_exit(1);
					*hopTo = g;
					kill(0, SIGUSR1);
					char path[4096], num[32];
					snprintf(path, sizeof path, "%s.hop", out);
					int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
					if (fd < 0 || write(fd, num, snprintf(num, sizeof num, "%d", g)) < 0)
						_exit(1);
					close(fd);
				}
				if (c > 0)
					for (;;)
						pause();
				if ((groups || dodging) && setpgid(0, 0) != 0)
					_exit(1);
				const char *dodges = getenv("HEARTBEAT_DODGE");
				if (dodging && (dodges == NULL || atoi(dodges) != 0))
					dodgeOf = twoThirds;
			}
			if (!plain)
				contimer();
		} else if (strcmp(mode, "stopguard") == 0) {
			if (kill(guard, SIGSTOP) != 0)
				_exit(1);
		} else if (strcmp(mode, "traceguard") == 0) {
			traceguard(guard);
		} else if (strcmp(mode, "forgelease") == 0 || strcmp(mode, "forgereport") == 0) {
			if (strcmp(mode, "forgereport") == 0) {
				if ((reportfd = take(guard, 4)) < 0)
					_exit(1);
			} else {
				takeSockets(parent(guard));
				if (nforge == 0)
					_exit(1);
			}
		} else if (strcmp(mode, "termguard") == 0) {
			signal(SIGTERM, SIG_IGN);
			termguard = guard;
		} else if (strcmp(mode, "userns") == 0) {
			if (clone(nsinit, stack + sizeof stack, CLONE_NEWUSER | CLONE_NEWPID | SIGCHLD, NULL) < 0)
				_exit(1);
			report(); // the namespace's parent: its pid is the guard's to see
			for (;;)
				pause();
		} else {
			_exit(2);
		}
		report();
		beat();
	}
	for (;;)
		pause();
}
