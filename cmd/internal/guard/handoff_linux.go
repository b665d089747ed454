//go:build linux

package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// handoffByte is the one byte the guard sends with its end of the new
// report channel (see HandOver).
const handoffByte = 'H'

// errTraced: a process traces the guard (ptrace), and could make it say
// anything to tenure.
var errTraced = errors.New("traced")

// notTraced returns an error naming the process that traces pid (0:
// the calling process), if one does.
func notTraced(pid int) error {
	tracer, err := tracerOf(pid)
	switch {
	case err != nil:
		return fmt.Errorf("cannot tell whether the guard is traced: %w", err)
	case tracer != 0:
		return fmt.Errorf("the guard is %w by process %d (ptrace: strace -f, a debugger), which could make it tell tenure anything", errTraced, tracer)
	}
	return nil
}

// tracerOf returns the TracerPid of /proc/PID/status (0: the calling
// process), 0 when nothing traces it.
func tracerOf(pid int) (int, error) {
	name := "self"
	if pid != 0 {
		name = strconv.Itoa(pid)
	}
	b, err := os.ReadFile("/proc/" + name + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("TracerPid:")); ok {
			return strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	return 0, errors.New("no TracerPid in /proc/" + name + "/status")
}

// handOver makes the guard's report channel anew: a socket pair made once
// the guard is not dumpable, of which it sends tenure one end on old (the
// report channel it started with, which it closes), and returns the other.
// A process that took old from the guard in the instant between its
// execve and Undumpable (pidfd_getfd) can no longer reach tenure through
// it: tenure reads reports only from the end it received (AcceptReport).
func handOver(old *os.File) (*os.File, error) {
	fds, err := socketpair()
	if err != nil {
		return nil, os.NewSyscallError("socketpair", err)
	}
	err = unix.Sendmsg(int(old.Fd()), []byte{handoffByte}, unix.UnixRights(fds[0]), nil, 0)
	unix.Close(fds[0])
	if err != nil {
		unix.Close(fds[1])
		return nil, fmt.Errorf("hand tenure the report channel: %w", os.NewSyscallError("sendmsg", err))
	}
	old.Close()
	return os.NewFile(uintptr(fds[1]), "report"), nil
}

// AcceptReport receives on rep, tenure's end of the report channel it gave
// the guard with pid, the report channel the guard makes once it is not
// dumpable, and returns it (close-on-exec, for reading Reports). The
// channel is refused, and the guard must be taken as failed, when
// anything else comes first on rep; when the socket received was not made
// by the guard (SO_PEERCRED: another process wrote on rep, having taken
// the guard's end before it was not dumpable); or when a process traces
// the guard. Close rep afterwards, whatever the outcome: nothing more is
// read from it.
func AcceptReport(rep *os.File, pid int) (*os.File, error) {
	buf, oob := make([]byte, 512), make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, err := recvmsg(rep, buf, oob)
	if err != nil {
		return nil, fmt.Errorf("receive the guard's report channel: %w", err)
	}
	fds, err := rights(oob[:oobn])
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	switch {
	case err != nil:
		return nil, fmt.Errorf("receive the guard's report channel: %w", err)
	case n == 0 && len(fds) == 0:
		return nil, errors.New("the guard ended before it handed over its report channel")
	case n != 1 || buf[0] != handoffByte || len(fds) != 1 || flags&unix.MSG_CTRUNC != 0:
		return nil, notHandedOver(buf[:n], len(fds))
	}
	cred, err := unix.GetsockoptUcred(fds[0], unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return nil, fmt.Errorf("the report channel handed over: %w", os.NewSyscallError("getsockopt SO_PEERCRED", err))
	}
	if int(cred.Pid) != pid {
		return nil, fmt.Errorf("a report channel made by process %d, not by the guard (%d), came on the guard's report channel: refused", cred.Pid, pid)
	}
	if err := notTraced(pid); err != nil {
		return nil, fmt.Errorf("%w: refused", err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		return nil, os.NewSyscallError("fcntl", err)
	}
	f := os.NewFile(uintptr(fds[0]), "guard report")
	fds = nil
	return f, nil
}

// notHandedOver is the error of a report channel that carried b and nfds
// descriptors where the guard hands over its own: a failure it reported
// before its handover (such as being traced), or anything a process that
// took the guard's end wrote.
func notHandedOver(b []byte, nfds int) error {
	var r Report
	if json.Unmarshal(b, &r) == nil && r.Err != "" && nfds == 0 {
		return fmt.Errorf("before handing over its report channel, the guard (or a process that took its end) reported %q: refused", r.Err)
	}
	return fmt.Errorf("the guard's report channel carried %q (%d descriptors) where the guard hands over a channel of its own: refused", bytes.TrimSpace(b), nfds)
}

// recvmsg receives one message on f, waiting for it in the runtime's
// poller, with the descriptors it carries close-on-exec.
func recvmsg(f *os.File, buf, oob []byte) (n, oobn, flags int, err error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return 0, 0, 0, err
	}
	var rerr error
	err = raw.Read(func(fd uintptr) bool {
		n, oobn, flags, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN
	})
	if err == nil && rerr != nil {
		err = os.NewSyscallError("recvmsg", rerr)
	}
	return n, oobn, flags, err
}

// rights returns the file descriptors that the control messages oob carry.
func rights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			return fds, err
		}
		fds = append(fds, got...)
	}
	return fds, nil
}
