/* states makes one process of a command's tree sit in one state, for the
 * guard's state-matrix test (states_linux_test.go):
 *
 *	states MODE OUT
 *
 * Once the state is made, it writes "PID" (the process in that state) to
 * OUT (through OUT.tmp and a rename); every process it starts then blocks
 * until killed. A zombie leader's threads ignore SIGTERM; in termfork, a
 * SIGTERM makes a new process. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *out;

/* report writes pid to OUT atomically. */
static void report(pid_t pid) {
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", out);
	FILE *f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", (int)pid) < 0 || fclose(f) != 0 || rename(tmp, out) != 0) {
		perror("report");
		_exit(3);
	}
}

static void block(void) {
	for (;;)
		pause();
}

static void *sleep_thread(void *arg) {
	(void)arg;
	block();
	return NULL;
}

/* zombie_thread waits until its process's leader shows as a zombie, then
 * reports the process and sleeps. */
static void *zombie_thread(void *arg) {
	pid_t pid = getpid();
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	(void)arg;
	for (;;) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
		if (f)
			fclose(f);
		buf[n] = 0;
		char *p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'Z')
			break;
		usleep(1000);
	}
	report(pid);
	return sleep_thread(NULL);
}

/* zleader: threads run on while the leader ended with pthread_exit. */
static void zleader(void) {
	pthread_t t;
	signal(SIGTERM, SIG_IGN);
	if (pthread_create(&t, NULL, zombie_thread, NULL) != 0 || pthread_create(&t, NULL, sleep_thread, NULL) != 0)
		_exit(4);
	pthread_exit(NULL);
}

static char vfork_stack[1 << 16];

static int vfork_child(void *arg) {
	(void)arg;
	block();
	return 0;
}

/* termfork: on each SIGTERM, fork a process that starts a session of its
 * own and blocks. */
static void termfork(int sig) {
	(void)sig;
	if (fork() == 0) {
		setsid();
		block();
	}
}

static int tracer(pid_t target) {
	int st;
	if (ptrace(PTRACE_ATTACH, target, 0, 0) != 0 || waitpid(target, &st, __WALL) != target) {
		perror("ptrace");
		_exit(5);
	}
	report(target);
	block();
	return 0;
}

/* fork_thread forks a child that blocks, then blocks. */
static void *fork_thread(void *arg) {
	if (fork() == 0)
		block();
	return sleep_thread(arg);
}

static void threads(int n) {
	pthread_t t;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t, NULL, sleep_thread, NULL) != 0)
			_exit(4);
	report(getpid());
	block();
}

int main(int argc, char **argv) {
	if (argc != 3)
		return 2;
	const char *mode = argv[1];
	out = argv[2];
	pid_t c;
	if (!strcmp(mode, "running")) {
		report(getpid());
		for (;;)
			;
	} else if (!strcmp(mode, "sleeping")) {
		report(getpid());
		block();
	} else if (!strcmp(mode, "disk")) {
		/* The parent of a CLONE_VFORK child waits, uninterruptibly but
		 * killably (D), until the child execs or exits: never. */
		report(getpid());
		if (clone(vfork_child, vfork_stack + sizeof vfork_stack, CLONE_VFORK | SIGCHLD, NULL) < 0)
			_exit(6);
		block();
	} else if (!strcmp(mode, "stopped")) {
		report(getpid());
		raise(SIGSTOP);
		block();
	} else if (!strcmp(mode, "traced")) {
		/* Traced (t) by its own child, which never lets it go on. */
		prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
		pid_t self = getpid();
		if ((c = fork()) == 0)
			return tracer(self);
		block();
	} else if (!strcmp(mode, "zleader")) {
		zleader();
	} else if (!strcmp(mode, "zleader-orphan")) {
		/* The command's child is a zombie leader whose threads (which
		 * ignore SIGTERM) run on; the command exits once OUT.exit
		 * exists. */
		char exit_file[4096];
		snprintf(exit_file, sizeof exit_file, "%s.exit", out);
		if ((c = fork()) == 0)
			zleader();
		while (access(exit_file, F_OK) != 0)
			usleep(1000);
		return 0;
	} else if (!strcmp(mode, "zombie")) {
		/* A child that exits and is never waited for. */
		if ((c = fork()) == 0)
			_exit(0);
		report(c);
		block();
	} else if (!strcmp(mode, "setsid") || !strcmp(mode, "setpgid")) {
		if ((c = fork()) == 0) {
			if (!strcmp(mode, "setsid") ? setsid() < 0 : setpgid(0, 0) != 0)
				_exit(7);
			report(getpid());
			block();
		}
		block();
	} else if (!strcmp(mode, "orphan")) {
		/* Double fork: the grandchild is reparented to the subreaper. */
		if ((c = fork()) == 0) {
			pid_t parent = getpid();
			if (fork() == 0) {
				while (getppid() == parent)
					usleep(1000);
				report(getpid());
				block();
			}
			_exit(0);
		}
		waitpid(c, NULL, 0);
		block();
	} else if (!strcmp(mode, "reexec")) {
		char *args[] = {argv[0], "sleeping", argv[2], NULL};
		execv("/proc/self/exe", args);
		_exit(8);
	} else if (!strcmp(mode, "clone0")) {
		/* A child whose exit signal is none (not SIGCHLD): wait(2)
		 * sees it only with __WALL or __WCLONE. */
		if ((c = clone(vfork_child, vfork_stack + sizeof vfork_stack, 0, NULL)) < 0)
			_exit(6);
		report(c);
		block();
	} else if (!strcmp(mode, "termfork")) {
		/* A child that forks an escape (a new session) whenever it is
		 * sent SIGTERM, and lives on. */
		if ((c = fork()) == 0) {
			signal(SIGTERM, termfork);
			report(getpid());
			block();
		}
		block();
	} else if (!strcmp(mode, "threads")) {
		threads(64);
	} else if (!strcmp(mode, "threadkids")) {
		/* The command's children hang off a thread other than its
		 * leader: one the thread forked, and one the leader forked
		 * before it ended with pthread_exit (passed to the thread). */
		pthread_t t;
		if ((c = fork()) == 0)
			block();
		report(c);
		if (pthread_create(&t, NULL, fork_thread, NULL) != 0)
			_exit(4);
		pthread_exit(NULL);
	}
	return 2;
}
