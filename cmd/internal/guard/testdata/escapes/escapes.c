// escapes MODE OUT: the command makes a process of its tree that tries to
// leave the tree by the way MODE names, in a process group of its own
// (out of reach of a kill of the command's group), writes that process's pid (as the
// guard sees it) to OUT once it is in place, and sleeps until killed.
//   subreaper   a subreaper in the tree whose grandchild it inherits dies
//   threadfork  a thread forks after its leader ended with pthread_exit
//   newpid      a grandchild in a new PID namespace
//   nobody      a child that became user nobody
//   cloneparent a child made by clone(CLONE_PARENT) of a child that exits
//   vfork       a child made by vfork that never execs (its parent waits in
//               vfork for as long as it lives)
//   comm        a child that renames itself ("x) Z 1 1 1", by
//               PR_SET_NAME, and in its argv) to look, in its stat line, like
//               a zombie child of init
//   keepreaper  a subreaper in the tree that lives on and reaps the
//               children of its orphaned grandchild, which it inherits
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *out;

// report writes this process's pid, as /proc (the guard's) shows it, to out.
static void report(void) {
	char self[64] = {0}, tmp[4096];
	if (readlink("/proc/self", self, sizeof self - 1) < 0)
		_exit(1);
	snprintf(tmp, sizeof tmp, "%s.tmp", out);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, self, strlen(self)) < 0)
		_exit(1);
	close(fd);
	rename(tmp, out);
}

// alone leaves the command's process group for one of its own.
static void alone(void) {
	if (setpgid(0, 0) != 0)
		_exit(1);
}

static void sleepForever(void) {
	for (;;)
		pause();
}

static void *forker(void *arg) {
	usleep(100000); // the leader has exited by now
	if (fork() == 0) {
		alone();
		report();
		sleepForever();
	}
	sleepForever();
	return NULL;
}

static char stack[1 << 16];

static int cloned(void *arg) {
	usleep(200000); // its creator has exited by now
	alone();
	report();
	sleepForever();
	return 0;
}

int main(int argc, char **argv) {
	if (argc != 3)
		return 2;
	const char *mode = argv[1];
	out = argv[2];
	if (strcmp(mode, "subreaper") == 0) {
		if (fork() == 0) {
			prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
			if (fork() == 0) {
				if (fork() == 0) {
					usleep(300000); // both ancestors have died by now
					alone();
					report();
					sleepForever();
				}
				_exit(0);
			}
			usleep(100000);
			_exit(0);
		}
	} else if (strcmp(mode, "threadfork") == 0) {
		if (fork() == 0) {
			pthread_t t;
			pthread_create(&t, NULL, forker, NULL);
			pthread_exit(NULL);
		}
	} else if (strcmp(mode, "newpid") == 0) {
		if (fork() == 0) {
			alone();
			if (unshare(CLONE_NEWPID) != 0)
				_exit(1);
			if (fork() == 0) { // pid 1 of the new namespace
				if (fork() == 0) {
					report();
					sleepForever();
				}
				sleepForever();
			}
			_exit(0);
		}
	} else if (strcmp(mode, "nobody") == 0) {
		if (fork() == 0) {
			// nobody may not write in the test's directory: open first.
			alone();
			int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0 || setgid(65534) != 0 || setuid(65534) != 0)
				_exit(1);
			dprintf(fd, "%d\n", getpid());
			close(fd);
			sleepForever();
		}
	} else if (strcmp(mode, "cloneparent") == 0) {
		if (fork() == 0) {
			if (clone(cloned, stack + sizeof stack, CLONE_PARENT | SIGCHLD, NULL) < 0)
				_exit(1);
			_exit(0);
		}
	} else if (strcmp(mode, "vfork") == 0) {
		if (fork() == 0) {
			if (vfork() == 0) {
				alone();
				report();
				sleepForever();
			}
			_exit(0);
		}
	} else if (strcmp(mode, "comm") == 0) {
		if (fork() == 0) {
			static const char name[] = "x) Z 1 1 1";
			alone();
			if (prctl(PR_SET_NAME, name, 0, 0, 0) != 0)
				_exit(1);
			strncpy(argv[0], name, strlen(argv[0]));
			report();
			sleepForever();
		}
	} else if (strcmp(mode, "keepreaper") == 0) {
		if (fork() == 0) {
			prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
			if (fork() == 0) {
				if (fork() == 0) {
					usleep(100000); // its parent has died by now
					if (fork() == 0) {
						alone();
						report();
						sleepForever();
					}
					_exit(0);
				}
				_exit(0);
			}
			for (;;) // reaps whatever it inherits, for ever
				if (wait(NULL) < 0)
					usleep(10000);
		}
	} else {
		return 2;
	}
	sleepForever();
}
