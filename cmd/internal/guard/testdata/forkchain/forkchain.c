// forkchain OUT [exit|run [own|guardgroup|setsid]]: the command forks a
// chain whose every process forks its successor and exits at once, so that
// no pid of the chain lives longer than one fork. The chain runs in a
// process group of its own (own, the default), in the guard's
// (guardgroup), or each of its processes starts a session and process
// group of its own before it forks (setsid). The chain's first group is
// written to OUT (once its leader has left: the group then has no leader),
// and every 64 generations the generation count is written to OUT.gen.
// The command itself sleeps until killed, or, if argv[2] is "exit", exits
// once OUT is written. The chain stops by itself after 60 s, or once OUT.stop exists,
// should nobody kill it.
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void writefile(const char *path, long v) {
	char tmp[4096], buf[32];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		_exit(1);
	int n = snprintf(buf, sizeof buf, "%ld\n", v);
	if (write(fd, buf, n) != n)
		_exit(1);
	close(fd);
	rename(tmp, path);
}

int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	char gen[4096];
	snprintf(gen, sizeof gen, "%s.gen", argv[1]);
	int gfd = open(gen, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (gfd < 0)
		return 1;
	pid_t group = 0; // a group of its own
	const char *mode = argc > 3 ? argv[3] : "own";
	if (strcmp(mode, "guardgroup") == 0)
		group = getpgid(getppid());
	int newsession = strcmp(mode, "setsid") == 0;
	char stop[4096];
	snprintf(stop, sizeof stop, "%s.stop", argv[1]);
	pid_t c = fork();
	if (c < 0)
		return 1;
	if (c == 0) {
		if (setpgid(0, group) != 0)
			_exit(1);
		pid_t pgid = getpgid(0);
		time_t until = time(NULL) + 60;
		for (long g = 0;; g++) {
			pid_t p = fork();
			if (p < 0)
				continue;
			if (p > 0)
				_exit(0);
			if (newsession && setsid() < 0)
				_exit(1);
			if (g == 1)
				writefile(argv[1], pgid); // the leader has gone
			if (g % 64 == 0) {
				char buf[32];
				int n = snprintf(buf, sizeof buf, "%20ld\n", g);
				if (pwrite(gfd, buf, n, 0) != n)
					_exit(1);
				if (time(NULL) > until || access(stop, F_OK) == 0)
					_exit(0);
			}
		}
	}
	if (argc > 2 && strcmp(argv[2], "exit") == 0) {
		while (access(argv[1], F_OK) != 0) // the chain is under way
			usleep(1000);
		return 0;
	}
	for (;;)
		pause();
}
