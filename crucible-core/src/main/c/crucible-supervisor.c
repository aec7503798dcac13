/*
 * crucible-supervisor: the program of a session's sandbox (issue 27; notes/issue-27-design.md §2). It starts the
 * session's interpreter as its first child, on the sandbox's stdin and stdout (the host's frame channel, untouched:
 * no hop per cell), and then serves the host's requests on a control socket to run commands beside it:
 *
 *   0. PR_SET_CHILD_SUBREAPER (every orphan of the session comes back here and is reaped), not dumpable (no
 *      /proc/PID/mem of it for the session's programs), SIGCHLD through a signalfd, the terminal signals ignored;
 *   1. fork and exec the interpreter with the default signal dispositions; keep nothing of its stdin and stdout;
 *   2. say HELLO on the control socket (fd CONTROL_FD, connected by crucible-launch while still root, before the
 *      sandbox existed: nothing inside can reach the host's end) and serve it: SPAWN a command on three pipes (or a
 *      terminal of the sandbox's devpts, whose close sends VEOF),
 *      WRITE to its stdin (a background command keeps it open), SIGNAL one (or its process group), PING; it answers
 *      STARTED or ERR, then DATA as the command writes and EXIT
 *      once it has ended and its pipes are drained (or closed 50 ms after its end: a daemon it left holding them
 *      does not hold the answer);
 *   2b. in a session with root inside (bubblewrap left this process uid 0 of the session's user namespace, with the
 *      capabilities it was given: a writable root), every child but a SPAWN with flag 4 becomes the session's user
 *      (uid and gid 1000, no supplementary group, an empty bounding set, no capability) before it execs, the
 *      interpreter included; a flag-4 command stays root of the session's namespace with those capabilities. Without
 *      root inside, flag 4 is refused (EPERM);
 *   3. when the interpreter ends, end with its status (its exit code, or 128 + its signal): the sandbox ends with it,
 *      as a session's sandbox always has. When the host closes the control socket, end too.
 *
 * Frames, both ways: u32 length of what follows, u8 kind, u8 flags, u16 0, u32 id, then the body; integers big-endian,
 * strings as u32 length + bytes. host->supervisor: SPAWN(1, id = request; flags 1 = keep its stdin open after the
 * bytes given, 2 = on a terminal (a PTY of the sandbox's devpts: stdin, stdout and stderr all on it, its output as
 * stdout), 4 = as root of the session's namespace; u32 argc, argv, u32 envc, env (NAME=VALUE on top of the session's), cwd (empty: the sandbox's), stdin,
 * u32 rows, u32 cols), SIGNAL(2, id = pid; u32 signal; flags 1 = its process group), PING(3), WRITE(4, id = request;
 * flags 1 = close its stdin after; u32 pid, bytes), RESIZE(5, id = pid; u32 rows, u32 cols: its terminal's size, and
 * SIGWINCH to its foreground group). supervisor->host: HELLO(64; u32 version), STARTED(65, id = request; u32 pid),
 * ERR(66, id = request; u32 errno, text), DATA(67, id = pid; flags 1 stdout, 2 stderr; bytes), EXIT(68, id = pid;
 * u32 wait status), PONG(69), WRITTEN(70, id = request; u32 bytes queued). A frame that breaks these rules ends the
 * supervisor (the host then sees the sandbox end): the host is the only writer, and a broken frame is a bug.
 *
 * usage: crucible-supervisor CONTROL_FD -- PROGRAM ARGS...   Exit code 125: a step failed (message on stderr).
 * Static: it runs in any image, whatever its C library, and ignores LD_PRELOAD and /etc/ld.so.preload.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <string.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FAIL 125
#define VERSION 2
#define MAX_PROCS 256
#define MAX_FRAME (2u << 20) /* host->supervisor: argv, env and stdin of one command */
#define CHUNK 32768
#define DRAIN_MS 50
#define MAX_PENDING (1u << 20) /* stdin bytes a command has not read yet */

enum { SPAWN = 1, SIGNAL = 2, PING = 3, WRITE = 4, RESIZE = 5, HELLO = 64, STARTED = 65, ERR = 66, DATA = 67, EXIT = 68, PONG = 69,
       WRITTEN = 70 };

struct proc {
    pid_t pid;             /* 0: a free entry */
    int out, err, in;      /* -1 once closed */
    char *input;           /* what is left to write to its stdin */
    size_t input_len, input_off;
    int keep_in;           /* stdin stays open once its bytes are written (WRITE adds more) */
    int pty;               /* out is its terminal's master (in a dup of it) */
    int exited, status;
    long exited_ms;
};

static struct proc procs[MAX_PROCS];
static int control;
static pid_t interpreter;

static void die(const char *what) {
    dprintf(2, "crucible-supervisor: %s: %s\n", what, strerror(errno));
    _exit(FAIL);
}

static long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

static void write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("cannot write to the control socket");
        p += w;
        n -= (size_t) w;
    }
}

/* one frame to the host: header and body in one write when small, so frames never interleave (one thread) */
static void send_frame(int kind, int flags, uint32_t id, const void *body, size_t len) {
    char head[12];
    uint32_t length = htonl((uint32_t) (8 + len)), nid = htonl(id);
    memcpy(head, &length, 4);
    head[4] = (char) kind;
    head[5] = (char) flags;
    head[6] = head[7] = 0;
    memcpy(head + 8, &nid, 4);
    write_all(control, head, sizeof head);
    if (len > 0) write_all(control, body, len);
}

static void send_u32(int kind, uint32_t id, uint32_t value) {
    uint32_t v = htonl(value);
    send_frame(kind, 0, id, &v, 4);
}

static void send_err(uint32_t id, int error, const char *text) {
    char body[8 + 256];
    size_t n = strnlen(text, 256);
    uint32_t e = htonl((uint32_t) error), l = htonl((uint32_t) n);
    memcpy(body, &e, 4);
    memcpy(body + 4, &l, 4);
    memcpy(body + 8, text, n);
    send_frame(ERR, 0, id, body, 8 + n);
}

/* a reader over one frame's body: every read is bounds-checked; a short frame fails the whole request */
struct reader { const char *p; size_t left; int bad; };

static uint32_t read_u32(struct reader *r) {
    if (r->bad || r->left < 4) { r->bad = 1; return 0; }
    uint32_t v;
    memcpy(&v, r->p, 4);
    r->p += 4;
    r->left -= 4;
    return ntohl(v);
}

/* a string of the frame, copied with a terminating NUL (NULs inside are refused: argv and env cannot carry them) */
static char *read_str(struct reader *r, size_t *len_out) {
    uint32_t n = read_u32(r);
    if (r->bad || n > r->left) { r->bad = 1; return NULL; }
    char *s = malloc((size_t) n + 1);
    if (!s) die("out of memory");
    memcpy(s, r->p, n);
    s[n] = 0;
    r->p += n;
    r->left -= n;
    if (len_out) *len_out = n;
    else if (strlen(s) != n) { free(s); r->bad = 1; return NULL; }
    return s;
}

static char **read_strs(struct reader *r) {
    uint32_t n = read_u32(r);
    if (r->bad || n > r->left / 4) { r->bad = 1; return NULL; }
    char **v = calloc((size_t) n + 1, sizeof *v);
    if (!v) die("out of memory");
    for (uint32_t i = 0; i < n && !r->bad; i++) v[i] = read_str(r, NULL);
    return v;
}

static void free_strs(char **v) {
    if (!v) return;
    for (char **p = v; *p; p++) free(*p);
    free(v);
}

static void default_signals(void) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL); /* SIG_IGN would survive the exec */
}

/* the session's user inside its namespace */
#define USER_ID 1000

/* whether this supervisor is root of the session's namespace (a session with root inside) */
static int rooted;

/*
 * A child that is not to be root: every capability out of its bounding set (while CAP_SETPCAP is still held), no
 * ambient one, no supplementary group, then uid and gid 1000, which clears the rest. Nothing when not rooted (the
 * whole sandbox is already the user).
 */
static int become_user(void) {
    if (!rooted) return 0;
    for (int cap = 0; cap <= CAP_LAST_CAP; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return -1;
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) return -1;
    if (setgroups(0, NULL) != 0 || setresgid(USER_ID, USER_ID, USER_ID) != 0
        || setresuid(USER_ID, USER_ID, USER_ID) != 0) {
        return -1;
    }
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capset, &header, data) != 0) return -1;
    return setuid(0) == 0 ? (errno = EPERM, -1) : 0; /* the switch must hold */
}

/* the command's side of the fork: each step reports its errno on the error pipe (close-on-exec: silence = exec'd) */
__attribute__((noreturn)) static void child(int in, int out, int err, int report, const char *cwd, char **argv,
                                            char **env, const char *tty, int as_root) {
    int step = 0;
    default_signals();
    if (setsid() < 0) goto failed;
    step = 1;
    if (tty) { /* its own terminal: opened as a session leader, it becomes the controlling one (as the supervisor's
                * uid: the session's user is given the terminal, not the other way round) */
        int slave = open(tty, O_RDWR);
        if (slave < 0 || ioctl(slave, TIOCSCTTY, 0) != 0) goto failed;
        if (rooted && !as_root && fchown(slave, USER_ID, (gid_t) -1) != 0) goto failed;
        in = out = err = slave;
    }
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) goto failed;
    step = 5;
    if (!as_root && become_user() != 0) goto failed;
    step = 2;
    if (cwd[0] && chdir(cwd) != 0) goto failed;
    step = 3;
    if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
        for (int f = 3; f < 1024; f++) if (f != report) close(f);
    }
    umask(022);
    if (as_root && (setenv("HOME", "/root", 1) != 0 || setenv("USER", "root", 1) != 0
                    || setenv("LOGNAME", "root", 1) != 0)) {
        goto failed; /* root's own home, not the user's /workspace: nothing the user planted is read as root */
    }
    for (char **e = env; *e; e++) { /* on top of the session's own (this process's); PATH looked up after */
        if (putenv(*e) != 0) goto failed;
    }
    execvp(argv[0], argv);
    step = 4;
failed:;
    int e[2] = {step, errno};
    if (write(report, e, sizeof e) != (ssize_t) sizeof e) _exit(FAIL);
    _exit(FAIL);
}

static struct proc *find(pid_t pid) {
    for (int i = 0; i < MAX_PROCS; i++) if (procs[i].pid == pid) return &procs[i];
    return NULL;
}

static void spawn(uint32_t req, int flags, struct reader *r) {
    char **argv = read_strs(r), **env = read_strs(r);
    char *cwd = read_str(r, NULL);
    size_t input_len = 0;
    char *input = read_str(r, &input_len);
    struct winsize size = {.ws_row = (unsigned short) read_u32(r), .ws_col = (unsigned short) read_u32(r)};
    struct proc *slot = find(0);
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, report[2] = {-1, -1}, master = -1;
    char *tty = NULL, name[128];
    if (r->bad || r->left != 0 || !argv || !argv[0]) {
        send_err(req, EINVAL, "a malformed request to run a command");
        goto done;
    }
    if (!slot) {
        send_err(req, EAGAIN, "too many commands are running in this session");
        goto done;
    }
    if ((flags & 4) && !rooted) {
        send_err(req, EPERM, "this session has no root inside (a session made with a writable root has)");
        goto done;
    }
    if (flags & 2) { /* a terminal: the master here, the slave opened by the child */
        master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0 || grantpt(master) || unlockpt(master) || ptsname_r(master, name, sizeof name) != 0 ||
            (size.ws_row && size.ws_col && ioctl(master, TIOCSWINSZ, &size) != 0) || pipe2(report, O_CLOEXEC)) {
            send_err(req, errno, "cannot make the command's terminal");
            goto done;
        }
        tty = strdup(name); /* its own copy: freed at done, whatever happens after */
        if (!tty) die("out of memory");
        in[1] = fcntl(master, F_DUPFD_CLOEXEC, 3);
        out[0] = master;
        master = -1;
        if (in[1] < 0) {
            send_err(req, errno, "cannot make the command's terminal");
            goto done;
        }
    } else if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || pipe2(report, O_CLOEXEC)) {
        send_err(req, errno, "cannot make the command's pipes");
        goto done;
    }
    pid_t pid = fork();
    if (pid < 0) {
        int error = errno;
        char text[160];
        snprintf(text, sizeof text, "cannot start the command: %s%s", strerror(error),
                 error == EAGAIN ? " (the session has as many processes as its pids limit allows)" : "");
        send_err(req, error, text);
        goto done;
    }
    if (pid == 0) child(in[0], out[1], err[1], report[1], cwd, argv, env, tty, (flags & 4) != 0);
    close(report[1]);
    report[1] = -1;
    int e[2];
    ssize_t n;
    while ((n = read(report[0], e, sizeof e)) < 0 && errno == EINTR) {}
    if (n == (ssize_t) sizeof e) {
        static const char *steps[] = {"cannot start a session", "cannot set up its descriptors",
                                      "cannot change to its directory", "cannot close descriptors", "cannot run it",
                                      "cannot become the session's user"};
        char text[256];
        snprintf(text, sizeof text, "%s: %s", steps[e[0] >= 0 && e[0] <= 5 ? e[0] : 4], strerror(e[1]));
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
        send_err(req, e[1], text);
        goto done;
    }
    if (in[0] >= 0) close(in[0]);
    if (out[1] >= 0) close(out[1]);
    if (err[1] >= 0) close(err[1]);
    *slot = (struct proc) {.pid = pid, .out = out[0], .err = err[0], .in = in[1], .input = input,
                           .input_len = input_len, .keep_in = flags & 1, .pty = (flags & 2) != 0};
    in[0] = in[1] = out[0] = out[1] = err[0] = err[1] = -1;
    input = NULL;
    fcntl(slot->in, F_SETFL, O_NONBLOCK);
    if (slot->input_len == 0 && !slot->keep_in) {
        close(slot->in);
        slot->in = -1;
    }
    send_u32(STARTED, req, (uint32_t) pid);
done:
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0) close(in[i]);
        if (out[i] >= 0) close(out[i]);
        if (err[i] >= 0) close(err[i]);
        if (report[i] >= 0) close(report[i]);
    }
    if (master >= 0) close(master);
    free(tty);
    free_strs(argv);
    free_strs(env);
    free(cwd);
    free(input);
}

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* queues bytes for a command's stdin (written as its pipe takes them); flags 1: close it once they are written */
static void write_stdin(uint32_t req, int flags, struct reader *r) {
    uint32_t pid = read_u32(r);
    size_t n = r->bad ? 0 : r->left;
    struct proc *p = r->bad || pid == 0 ? NULL : find((pid_t) pid);
    if (!p || p->exited) {
        send_err(req, ESRCH, "the process has ended");
        return;
    }
    if (p->in < 0) {
        send_err(req, EPIPE, "the process's stdin is closed");
        return;
    }
    size_t pending = p->input_len - p->input_off;
    if (pending + n > MAX_PENDING) {
        char text[160];
        snprintf(text, sizeof text, "the process has not read the %zu bytes written to its stdin before", pending);
        send_err(req, EAGAIN, text);
        return;
    }
    if (n > 0) {
        char *joined = malloc(pending + n);
        if (!joined) die("out of memory");
        if (pending) memcpy(joined, p->input + p->input_off, pending);
        memcpy(joined + pending, r->p, n);
        free(p->input);
        p->input = joined;
        p->input_len = pending + n;
        p->input_off = 0;
    }
    if ((flags & 1) && p->pty) {
        /* a terminal has no end of file to close: its line discipline reads one from VEOF (Ctrl-D) */
        char *joined = realloc(p->input, p->input_len + 1);
        if (!joined) die("out of memory");
        joined[p->input_len++] = 4;
        p->input = joined;
    }
    if (flags & 1) p->keep_in = 0;
    if (!p->keep_in && p->input_off == p->input_len) close_fd(&p->in);
    send_u32(WRITTEN, req, (uint32_t) n);
}

static void request(const char *frame, size_t len) {
    if (len < 8) { errno = EPROTO; die("a frame without its header"); }
    int kind = (unsigned char) frame[0], flags = (unsigned char) frame[1];
    uint32_t id;
    memcpy(&id, frame + 4, 4);
    id = ntohl(id);
    struct reader r = {frame + 8, len - 8, 0};
    switch (kind) {
    case SPAWN:
        spawn(id, flags, &r);
        break;
    case WRITE:
        write_stdin(id, flags, &r);
        break;
    case RESIZE: {
        struct winsize size = {.ws_row = (unsigned short) read_u32(&r), .ws_col = (unsigned short) read_u32(&r)};
        struct proc *p = id == 0 ? NULL : find((pid_t) id);
        if (r.bad || !p || p->exited || !p->pty || p->out < 0) break; /* no terminal (any more): nothing to size */
        ioctl(p->out, TIOCSWINSZ, &size); /* the kernel sends SIGWINCH to its foreground group */
        break;
    }
    case SIGNAL: {
        uint32_t sig = read_u32(&r);
        struct proc *p = id == 0 ? NULL : find((pid_t) id);
        if (r.bad || !p || p->exited) break; /* ended meanwhile: its EXIT is on its way */
        kill(flags & 1 ? -p->pid : p->pid, (int) sig);
        break;
    }
    case PING:
        send_frame(PONG, 0, id, NULL, 0);
        break;
    default:
        errno = EPROTO;
        die("an unknown request");
    }
}

static void finish_if_done(struct proc *p, long now) {
    if (!p->exited) return;
    if (p->out >= 0 || p->err >= 0) {
        if (now - p->exited_ms < DRAIN_MS) return;
        close_fd(&p->out);
        close_fd(&p->err);
    }
    close_fd(&p->in);
    send_u32(EXIT, (uint32_t) p->pid, (uint32_t) p->status);
    free(p->input);
    memset(p, 0, sizeof *p);
}

static void reap(void) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG | __WALL)) > 0) {
        if (pid == interpreter) {
            /* the session's sandbox ends with its interpreter: bubblewrap's init follows this process out, and the
             * kernel kills whatever is left in the pid namespace (never kill(-1): outside a sandbox that is the host) */
            _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        }
        struct proc *p = find(pid);
        if (p) { /* else an orphan of the session: reaped, nothing to say */
            p->exited = 1;
            p->status = status;
            p->exited_ms = now_ms();
        }
    }
}

static void pump_output(struct proc *p, int *fd, int stream) {
    char buf[CHUNK];
    ssize_t n = read(*fd, buf, sizeof buf);
    if (n > 0) send_frame(DATA, stream, (uint32_t) p->pid, buf, (size_t) n);
    else if (n == 0 || (errno != EINTR && errno != EAGAIN)) close_fd(fd);
}

static void pump_input(struct proc *p) {
    ssize_t n = write(p->in, p->input + p->input_off, p->input_len - p->input_off);
    if (n > 0) p->input_off += (size_t) n;
    int broken = n < 0 && errno != EINTR && errno != EAGAIN; /* the command closed its stdin (EPIPE) */
    if (broken || p->input_off == p->input_len) {
        if (broken || !p->keep_in) close_fd(&p->in); /* done, or broken: the rest is dropped */
        free(p->input);
        p->input = NULL;
        p->input_len = p->input_off = 0;
    }
}

int main(int argc, char **argv) {
    if (argc < 4 || strcmp(argv[2], "--") != 0) {
        errno = EINVAL;
        die("usage: crucible-supervisor CONTROL_FD -- PROGRAM ARGS...");
    }
    control = atoi(argv[1]);
    if (fcntl(control, F_SETFD, FD_CLOEXEC) != 0) die("no control socket");
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) die("cannot become the session's subreaper");
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) die("cannot become undumpable");
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &chld, NULL) != 0) die("cannot block SIGCHLD");
    int sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sigfd < 0) die("cannot make a signalfd");
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, SIG_IGN); /* a cell's interrupt goes to the sandbox's programs, never to this one */
    signal(SIGQUIT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    rooted = geteuid() == 0;
    if (rooted) { /* what root inside was given is all any of its children can ever hold: the rest out of the bounding set */
        struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct data[2];
        if (syscall(SYS_capget, &header, data) != 0) die("cannot read its capabilities");
        for (int cap = 0; cap <= CAP_LAST_CAP; cap++) {
            if (!(data[cap / 32].permitted & (1u << (cap % 32)))
                && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
                die("cannot narrow its bounding set");
            }
        }
    }
    interpreter = fork();
    if (interpreter < 0) die("cannot start the interpreter");
    if (interpreter == 0) {
        default_signals();
        close(control);
        close(sigfd);
        if (become_user() != 0) die("cannot make the interpreter the session's user");
        execvp(argv[3], argv + 3);
        die("cannot run the interpreter");
    }
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0) die("cannot let go of the interpreter's channel");
    close(null);
    send_u32(HELLO, 0, VERSION);

    char *frame = malloc(MAX_FRAME);
    size_t have = 0;
    if (!frame) die("out of memory");
    struct pollfd fds[2 + 3 * MAX_PROCS];
    struct { struct proc *p; int which; } owner[3 * MAX_PROCS];
    for (;;) {
        int n = 0, waiting = 0;
        fds[n++] = (struct pollfd) {.fd = control, .events = POLLIN};
        fds[n++] = (struct pollfd) {.fd = sigfd, .events = POLLIN};
        for (int i = 0; i < MAX_PROCS; i++) {
            struct proc *p = &procs[i];
            if (!p->pid) continue;
            if (p->exited) waiting = 1;
            int *ends[3] = {&p->out, &p->err, &p->in};
            for (int w = 0; w < 3; w++) {
                if (*ends[w] < 0 || (w == 2 && p->input_off == p->input_len)) continue; /* stdin: only with bytes */
                owner[n - 2].p = p;
                owner[n - 2].which = w;
                fds[n++] = (struct pollfd) {.fd = *ends[w], .events = w == 2 ? POLLOUT : POLLIN};
            }
        }
        if (poll(fds, (nfds_t) n, waiting ? 10 : -1) < 0) {
            if (errno == EINTR) continue;
            die("poll");
        }
        if (fds[1].revents) {
            struct signalfd_siginfo info;
            while (read(sigfd, &info, sizeof info) > 0) {}
            reap();
        }
        for (int i = 2; i < n; i++) {
            if (!fds[i].revents) continue;
            struct proc *p = owner[i - 2].p;
            switch (owner[i - 2].which) {
            case 0: pump_output(p, &p->out, 1); break;
            case 1: pump_output(p, &p->err, 2); break;
            default: pump_input(p); break;
            }
        }
        if (fds[0].revents) {
            ssize_t got = read(control, frame + have, MAX_FRAME - have);
            if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
                _exit(0); /* the host has gone: so does the session's sandbox (its pid namespace with this process) */
            }
            if (got > 0) have += (size_t) got;
            while (have >= 4) {
                uint32_t len;
                memcpy(&len, frame, 4);
                len = ntohl(len);
                if (len < 8 || len > MAX_FRAME - 4) { errno = EMSGSIZE; die("a frame of a wrong length"); }
                if (have < 4 + (size_t) len) break;
                request(frame + 4, len);
                memmove(frame, frame + 4 + len, have - 4 - len);
                have -= 4 + len;
            }
        }
        long now = now_ms();
        for (int i = 0; i < MAX_PROCS; i++) if (procs[i].pid) finish_if_done(&procs[i], now);
    }
}
