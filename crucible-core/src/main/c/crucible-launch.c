/*
 * crucible-launch: the privileged steps of one sandbox launch in a single exec
 * (docs/sandbox-recipe.md, The launch chain), replacing the portable `sh` + `setpriv` chain:
 *
 *   0. for a sandbox with egress: join the network namespace the server made for it (--netns, a /proc/PID/fd link
 *      the server holds open), while still root; bwrap then keeps it (--share-net);
 *   1. join the run's cgroups, before anything else can fork (the pid goes into each cgroup.procs);
 *   2. set the rlimits (second guards: fsize, nofile, core, cpu, nproc, as);
 *   3. open the seccomp program as fd 3, the only descriptor besides 0, 1, 2 that reaches bwrap;
 *   4. when root: drop every capability from the bounding set, leave all groups, become the slot's
 *      unprivileged uid and gid, set no_new_privs (bwrap run as real root leaves the sandbox host uid 0, which
 *      may write the host's sysctls);
 *   5. ask for SIGKILL when the spawning thread dies (a crashed or kill -9'ed server takes its sandboxes with it:
 *      bwrap's --die-with-parent then tears the namespace down);
 *   6. leave the server's session and process group (setsid), so a terminal's Ctrl-C, which goes to its foreground
 *      process group, reaches the server (to interrupt a cell) and never the sandbox; exec bwrap with an EMPTY
 *      environment (bwrap's own environment is readable inside the sandbox as /proc/1/environ).
 *
 *   3b. for a session's sandbox (--control PATH): connect to the server's listener at PATH (a stream socket in a
 *      directory only the server can reach), while still root, and keep it as fd 4 for the session's supervisor
 *      (crucible-supervisor.c): the only other descriptor that reaches bwrap, made before the sandbox existed;
 *
 *   7. for a zygote (docs/zygote.md, --userns-map): after becoming the zygote's uid, enter a new user namespace whose
 *      uid and gid maps a forked helper, still root in the host's namespace, writes with more than one range (the
 *      zygote's own uid as 0, the slots' uids for its children); bwrap then runs as root of that namespace, with
 *      capabilities in it only, and passes those it is told to keep (--cap-add) to the zygote.
 *
 *   7b. for a session's sandbox (--own-mounts SESSION_DIR), while still root: a private mount namespace without the
 *      other sessions' mounts (their disks stay this launcher's otherwise, for as long as the sandbox runs);
 *   8. for a session with a writable root (--overlay-lower DIR --overlay-at DIR --overlay-upper DIR --overlay-work DIR,
 *      up to MAX_OVERLAYS times, each group begun by --overlay-lower; with --userns-map): after entering its user
 *      namespace, make a mount namespace of that user namespace's own, where the helper (still root in the host's
 *      namespaces) moves a read-only, nosuid, nodev copy of each lower tree idmapped to that user namespace (its root
 *      owner reads as the session's root, nothing is chowned) to AT.lower; then, as root of that namespace, mount
 *      overlayfs (userxattr) over each with the session's upper and work directories at its --overlay-at. The mounts live only in namespaces the session's user namespace owns: a killed server leaves no
 *      mount behind on the host, and copy-up runs on the session's own credentials. Linux 5.19 or later.
 *
 *   9. for a gVisor sandbox (--workspace-tmpfs DIR --workspace-size BYTES [--copy-in FILE NAME]...), while still root:
 *      a mount namespace of the launcher's own with a tmpfs of BYTES at DIR, owned by the slot's uid, holding copies of
 *      the program's FILEs at their NAMEs (relative, made by the server); runsc binds DIR at /workspace. gVisor cannot
 *      bind a host file into a tmpfs of its own, and the mount goes with the last process of the sandbox: nothing is
 *      left on the host.
 *
 *  10. for a gVisor sandbox (--own-netns, with --userns-map "0 UID 1,65534 SENTRY 1"): after entering its user namespace,
 *      a network namespace of that namespace's own, so that runsc's control socket (an abstract one, Debian's build)
 *      is reachable from no other namespace: runsc runs there as root of the user namespace (the slot's uid on the
 *      host), and its Sentry, which it runs as nobody, is the host uid SENTRY, owning nothing;
 *  11. to checkpoint a gVisor sandbox (--join PID, with --uid): after becoming the uid, join the user and network
 *      namespaces of PID, which must be a child of this launcher's parent (the server) still running, through a
 *      pidfd (never a pid reused meanwhile), so that runsc reaches that sandbox's control socket as its root.
 *
 * crucible-launch --init is something else: the init (pid 1) of a zygote child's pid namespace (docs/zygote.md). It
 * holds nothing and no capability, reaps every orphan (SIGCHLD ignored), handles no signal (so nothing inside its
 * namespace can signal it) and waits until the zygote kills it, which ends the namespace and everything in it.
 *
 * usage: crucible-launch [--netns PATH] [--cgroup FILE]... [--rlimit RES=VALUE]... --seccomp FILE [--control PATH]
 *                        [--uid N] [--userns-map "INSIDE OUTSIDE COUNT[,INSIDE OUTSIDE COUNT]..."]
 *                        [--overlay-lower DIR --overlay-at DIR --overlay-upper DIR --overlay-work DIR]...
 *                        [--workspace-tmpfs DIR --workspace-size BYTES [--copy-in FILE NAME]...]
 *                        [--own-netns] [--join PID] -- PROGRAM ARGS...
 * RES is one of fsize, nofile, core, cpu, nproc, as. Exit code 125 means a step failed (message on stderr,
 * prefixed "crucible-launch: "); it never runs the program then.
 *
 * Built static by the Maven build (scripts/build-launch.sh); Crucible falls back to sh + setpriv without it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <limits.h>
#include <linux/capability.h>

#define FAIL 125

static void die(const char *what, const char *arg) {
    dprintf(2, "crucible-launch: %s%s%s: %s\n", what, arg ? " " : "", arg ? arg : "", strerror(errno));
    _exit(FAIL);
}

static long number(const char *s) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 0) {
        errno = EINVAL;
        die("bad number", s);
    }
    return v;
}

static void join_cgroup(const char *procs) {
    int fd = open(procs, O_WRONLY | O_CLOEXEC);
    if (fd < 0) die("cannot open", procs);
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%d\n", (int) getpid());
    if (write(fd, pid, (size_t) n) != n) die("cannot join", procs);
    close(fd);
}

static void join_netns(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die("cannot open", path);
    if (setns(fd, CLONE_NEWNET) != 0) die("cannot join the network namespace", path);
    close(fd);
}

/* the session's control socket as fd 4, connected to the server's listener (not close-on-exec: bwrap passes it on) */
static void connect_control(const char *path) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) { errno = ENAMETOOLONG; die("control socket path too long", path); }
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) die("cannot make the control socket", NULL);
    if (connect(fd, (struct sockaddr *) &addr, sizeof addr) != 0) die("cannot connect the control socket", path);
    if (fd != 4) {
        if (dup2(fd, 4) != 4) die("cannot dup the control socket", NULL);
        close(fd);
    }
}

static void set_rlimit(const char *spec) {
    static const struct { const char *name; int resource; } names[] = {
        {"fsize", RLIMIT_FSIZE}, {"nofile", RLIMIT_NOFILE}, {"core", RLIMIT_CORE},
        {"cpu", RLIMIT_CPU}, {"nproc", RLIMIT_NPROC}, {"as", RLIMIT_AS},
    };
    const char *eq = strchr(spec, '=');
    if (!eq) { errno = EINVAL; die("bad rlimit", spec); }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strlen(names[i].name) == (size_t) (eq - spec) && strncmp(names[i].name, spec, (size_t) (eq - spec)) == 0) {
            struct rlimit r = {(rlim_t) number(eq + 1), (rlim_t) number(eq + 1)};
            if (setrlimit(names[i].resource, &r) != 0) die("cannot set rlimit", spec);
            return;
        }
    }
    errno = EINVAL;
    die("unknown rlimit", spec);
}

static void become(uid_t uid) {
    /* the bounding set can only shrink while we still hold CAP_SETPCAP, i.e. before the uid changes */
    for (int cap = 0; cap <= 63; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) die("cannot drop capability", NULL);
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) die("cannot clear ambient", NULL);
    if (setgroups(0, NULL) != 0) die("cannot clear groups", NULL);
    if (setresgid(uid, uid, uid) != 0) die("cannot set gid", NULL);
    if (setresuid(uid, uid, uid) != 0) die("cannot set uid", NULL);
    /* leaving uid 0 cleared the permitted and effective sets; clear the inheritable set too */
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capset, &header, data) != 0) die("cannot clear capabilities", NULL);
    uid_t r, e, s;
    if (getresuid(&r, &e, &s) != 0 || r != uid || e != uid || s != uid || setuid(0) == 0) {
        errno = EPERM;
        die("uid switch did not hold", NULL);
    }
}

/* writes one id map ("a b c,d e f" becomes lines) into /proc/PID/FILE in one write, as the kernel requires */
static void write_map(pid_t pid, const char *file, const char *map) {
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%d/%s", (int) pid, file);
    size_t n = strlen(map);
    if (n + 2 > sizeof text) { errno = E2BIG; die("id map too long", map); }
    for (size_t i = 0; i < n; i++) text[i] = map[i] == ',' ? '\n' : map[i];
    text[n] = '\n';
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) die("cannot open", path);
    if (write(fd, text, n + 1) != (ssize_t) (n + 1)) die("cannot write", path);
    close(fd);
}

/* the new mount API (Linux 5.2, idmapped mounts 5.12): no wrappers in older C libraries */
struct crucible_mount_attr { unsigned long long attr_set, attr_clr, propagation, userns_fd; };
#define CRUCIBLE_OPEN_TREE_CLONE 1
#define CRUCIBLE_MOVE_MOUNT_F_EMPTY_PATH 0x4
#define CRUCIBLE_MOUNT_ATTR_RDONLY 0x1
#define CRUCIBLE_MOUNT_ATTR_NOSUID 0x2
#define CRUCIBLE_MOUNT_ATTR_NODEV 0x4
#define CRUCIBLE_MOUNT_ATTR_IDMAP 0x00100000
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif

struct overlay { const char *lower, *at, *upper, *work; char lower_at[PATH_MAX]; };
#define MAX_OVERLAYS 4

/*
 * A user namespace that exists only to idmap a mount: a child unshares one, MAP is written as both its uid and gid map
 * (we are host root), and its descriptor is kept; the child is reaped, the namespace lives on through the descriptor.
 */
static int mapping_userns(const char *map) {
    int go[2];
    if (pipe2(go, O_CLOEXEC) != 0) die("cannot make a pipe", NULL);
    pid_t child = fork();
    if (child < 0) die("cannot fork", NULL);
    if (child == 0) {
        close(go[1]);
        if (unshare(CLONE_NEWUSER) != 0) _exit(FAIL);
        char byte;
        if (read(go[0], &byte, 1) < 0) _exit(FAIL); /* held until its namespace is mapped and opened */
        _exit(0);
    }
    close(go[0]);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/user", (int) child);
    int userns = -1;
    struct stat self;
    if (stat("/proc/self/ns/user", &self) != 0) die("cannot stat /proc/self/ns/user", NULL);
    for (int i = 0; i < 2000 && userns < 0; i++) { /* the child's unshare is a moment away */
        struct stat theirs;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, &theirs) == 0 && theirs.st_ino != self.st_ino) userns = fd;
        else if (fd >= 0) close(fd);
        if (userns < 0) usleep(1000);
    }
    if (userns < 0) { errno = ETIMEDOUT; die("a mapping user namespace did not appear", NULL); }
    for (int m = 0; m < 2; m++) {
        write_map(child, m == 0 ? "uid_map" : "gid_map", map);
    }
    close(go[1]);
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
    return userns;
}

/*
 * The helper's half of a writable root (still root in the host's namespaces): for each overlay, a detached copy of its
 * lower tree's mount (its submounts left out: overlayfs would not show them anyway), read-only, nosuid, nodev,
 * idmapped through a namespace that maps only the host's root, to the session's root: every other owner of a host file
 * reads as nobody inside, so a file the host's root or a host user keeps private stays private (the session's own map
 * would give a host uid 1000's files to the session's user). All are copied before the helper enters the session's own
 * mount namespace, where each is moved onto its lower mount point; the helper exits right after, so nothing of the
 * host keeps that namespace.
 */
static void idmap_lowers(pid_t pid, const struct overlay *overlays, int count, long root_uid) {
    char path[64], map[64];
    int trees[MAX_OVERLAYS];
    snprintf(map, sizeof map, "0 %ld 1", root_uid);
    int userns = mapping_userns(map);
    struct crucible_mount_attr attr = {.attr_set = CRUCIBLE_MOUNT_ATTR_IDMAP | CRUCIBLE_MOUNT_ATTR_RDONLY
                                                   | CRUCIBLE_MOUNT_ATTR_NOSUID | CRUCIBLE_MOUNT_ATTR_NODEV,
                                       .userns_fd = (unsigned long long) userns};
    for (int o = 0; o < count; o++) {
        trees[o] = (int) syscall(SYS_open_tree, AT_FDCWD, overlays[o].lower, CRUCIBLE_OPEN_TREE_CLONE | O_CLOEXEC);
        if (trees[o] < 0) die("cannot copy the mount of", overlays[o].lower);
        if (syscall(SYS_mount_setattr, trees[o], "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
            die("cannot idmap the mount of (Linux 5.19 or later, a file system that supports idmapped mounts)",
                overlays[o].lower);
        }
    }
    snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int) pid);
    int mntns = open(path, O_RDONLY | O_CLOEXEC);
    if (mntns < 0) die("cannot open", path);
    if (setns(mntns, CLONE_NEWNS) != 0) die("cannot enter the session's mount namespace", NULL);
    for (int o = 0; o < count; o++) {
        if (syscall(SYS_move_mount, trees[o], "", AT_FDCWD, overlays[o].lower_at, CRUCIBLE_MOVE_MOUNT_F_EMPTY_PATH) != 0) {
            die("cannot place the lower tree at", overlays[o].lower_at);
        }
    }
}

#define MAX_COPIES 128
struct copy { const char *from, *name; };

/*
 * Step 9: as host root, a mount namespace of the launcher's own (private) with a tmpfs of SIZE bytes at DIR, owned by
 * UID, and each FILE copied to DIR/NAME (its directories made), all UID's: a gVisor sandbox's /workspace.
 */
static void workspace_tmpfs(const char *dir, const char *size, long uid, const struct copy *copies, int count) {
    char options[128];
    if (number(size) <= 0) { errno = EINVAL; die("bad --workspace-size", size); }
    snprintf(options, sizeof options, "size=%s,mode=0755,uid=%ld,gid=%ld", size, uid, uid);
    if (unshare(CLONE_NEWNS) != 0) die("cannot make the launcher's mount namespace", NULL);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die("cannot make the mounts private", NULL);
    if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, options) != 0) die("cannot mount the workspace at", dir);
    for (int c = 0; c < count; c++) {
        char path[PATH_MAX];
        const char *name = copies[c].name;
        if (name[0] == '/' || strstr(name, "..") || (size_t) snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
            errno = EINVAL;
            die("bad --copy-in name", name);
        }
        for (char *slash = path + strlen(dir) + 1; (slash = strchr(slash, '/')) != NULL; slash++) {
            *slash = 0;
            if (mkdir(path, 0755) != 0 && errno != EEXIST) die("cannot make", path);
            if (lchown(path, (uid_t) uid, (gid_t) uid) != 0) die("cannot give", path);
            *slash = '/';
        }
        int in = open(copies[c].from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (in < 0) die("cannot open", copies[c].from);
        int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (out < 0) die("cannot create", path);
        char buffer[65536];
        ssize_t n;
        while ((n = read(in, buffer, sizeof buffer)) > 0) {
            for (ssize_t done = 0; done < n;) {
                ssize_t w = write(out, buffer + done, (size_t) (n - done));
                if (w < 0) die("cannot write", path);
                done += w;
            }
        }
        if (n < 0) die("cannot read", copies[c].from);
        if (fchown(out, (uid_t) uid, (gid_t) uid) != 0) die("cannot give", path);
        close(in);
        close(out);
    }
}

/*
 * As host root, before anything else of the session's launch: a mount namespace of its own, private, without the
 * other sessions' mounts (their disks and workspaces under the sessions' directory, SESSION_DIR's parent). This
 * launcher stays in it as bubblewrap's monitor for the sandbox's whole life: a copy of the host's whole table would keep
 * every other session's disk (and loop device) attached after that session is deleted.
 */
static void own_mounts(const char *session_dir) {
    if (unshare(CLONE_NEWNS) != 0) die("cannot make the launcher's mount namespace", NULL);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die("cannot make the mounts private", NULL);
    const char *slash = strrchr(session_dir, '/');
    if (!slash || slash == session_dir) { errno = EINVAL; die("bad --own-mounts", session_dir); }
    size_t parent = (size_t) (slash - session_dir), own = strlen(session_dir);
    FILE *info = fopen("/proc/self/mountinfo", "re");
    if (!info) die("cannot read", "/proc/self/mountinfo");
    char line[8192], point[PATH_MAX];
    while (fgets(line, sizeof line, info)) {
        /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT ...": the fifth field, octal escapes (\040 for a space) undone */
        char *field = line;
        for (int i = 0; i < 4 && field; i++) {
            field = strchr(field, ' ');
            if (field) field++;
        }
        if (!field) continue;
        size_t n = 0;
        for (char *c = field; *c && *c != ' ' && n + 1 < sizeof point; c++) {
            if (c[0] == '\\' && c[1] >= '0' && c[1] <= '7' && c[2] >= '0' && c[2] <= '7' && c[3] >= '0' && c[3] <= '7') {
                point[n++] = (char) ((c[1] - '0') * 64 + (c[2] - '0') * 8 + (c[3] - '0'));
                c += 3;
            } else {
                point[n++] = *c;
            }
        }
        point[n] = 0;
        int under_sessions = n > parent && strncmp(point, session_dir, parent) == 0 && point[parent] == '/';
        int ours = strncmp(point, session_dir, own) == 0 && (point[own] == 0 || point[own] == '/');
        if (under_sessions && !ours && umount2(point, MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT) {
            die("cannot let go of", point);
        }
    }
    fclose(info);
}

/* where the idmapped lower goes: AT.lower beside --overlay-at (made by the server) */
static void lower_path(struct overlay *o) {
    if (strlen(o->at) + 7 >= sizeof o->lower_at) { errno = ENAMETOOLONG; die("bad --overlay-at", o->at); }
    snprintf(o->lower_at, sizeof o->lower_at, "%s.lower", o->at);
}

/* the session's half, as root of its own user namespace: a private mount namespace, then (after the helper) overlayfs */
/*
 * Joins the user and network namespaces of PID (step 11), as the uid that owns that user namespace: PID is opened as a
 * pidfd first, then checked to be a sibling (a child of our parent, the server) still alive, so the namespaces joined
 * are that process's even if its pid were reused between the server's look and ours.
 */
static void join_sandbox(long pid) {
    int pidfd = (int) syscall(SYS_pidfd_open, (pid_t) pid, 0);
    if (pidfd < 0) die("cannot open the sandbox's process", NULL);
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, stat, sizeof stat - 1);
    if (fd >= 0) close(fd);
    if (n <= 0) die("cannot read", path);
    stat[n] = 0;
    char *end = strrchr(stat, ')'); /* "PID (COMM) STATE PPID ...": COMM may hold anything but not after the last ')' */
    long ppid = -1;
    if (!end || sscanf(end + 1, " %*c %ld", &ppid) != 1 || ppid != (long) getppid()) {
        errno = EPERM;
        die("not a sandbox of this server:", path);
    }
    struct pollfd alive = {.fd = pidfd, .events = POLLIN};
    if (poll(&alive, 1, 0) != 0) { errno = ESRCH; die("the sandbox's process has ended", NULL); }
    if (setns(pidfd, CLONE_NEWUSER | CLONE_NEWNET) != 0) die("cannot join the sandbox's namespaces", NULL);
    close(pidfd);
}

static void private_mounts(void) {
    if (unshare(CLONE_NEWNS) != 0) die("cannot make the session's mount namespace", NULL);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die("cannot make the mounts private", NULL);
}

static void mount_overlay(const struct overlay *o) {
    const char *lower_at = o->lower_at;
    char options[3 * PATH_MAX + 64];
    int n = snprintf(options, sizeof options, "lowerdir=%s,upperdir=%s,workdir=%s,userxattr", lower_at, o->upper,
                     o->work);
    if (n < 0 || (size_t) n >= sizeof options || strpbrk(lower_at, ",:") || strpbrk(o->upper, ",:")
        || strpbrk(o->work, ",:")) {
        errno = EINVAL;
        die("an overlay directory must not hold ',' or ':'", o->upper);
    }
    if (mount("overlay", o->at, "overlay", MS_NOSUID | MS_NODEV, options) != 0) die("cannot mount the overlay at", o->at);
}

/*
 * Enters a new user namespace owned by our (already unprivileged) uid, with MAP as its uid and gid maps: a map of more
 * than one range must be written by a process with CAP_SETUID in the parent namespace, so a helper forked while we
 * were still root writes it and exits; we wait for it before going on.
 */
static void enter_userns(const char *map, int to_helper, int from_helper, pid_t helper, int overlaid) {
    if (unshare(CLONE_NEWUSER) != 0) die("cannot create the sandbox's user namespace", NULL);
    char go = 1;
    if (write(to_helper, &go, 1) != 1) die("cannot wake the id map helper", NULL);
    char done = 0;
    if (read(from_helper, &done, 1) != 1 || done != 1) { errno = EPERM; die("the id map helper failed for", map); }
    if (overlaid) { /* root of the new namespace now: a mount namespace of its own, then the helper's idmapped lower */
        private_mounts();
        if (write(to_helper, &go, 1) != 1) die("cannot wake the id map helper", NULL);
        if (read(from_helper, &done, 1) != 1 || done != 1) { errno = EPERM; die("the helper could not idmap", NULL); }
    }
    int status;
    if (waitpid(helper, &status, 0) != helper || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        errno = EPERM;
        die("the id map helper failed for", map);
    }
    close(to_helper);
    close(from_helper);
}

/*
 * crucible-launch --probe-idmap DIR: whether this host can give a session a root of its own over DIR (step 8): DIR's
 * mount is copied and idmapped through a mapping user namespace, as a launch does. Exit 0 when it can; otherwise 125
 * with the reason (an old kernel, a file system without idmapped mounts, no privilege).
 */
__attribute__((noreturn)) static void probe_idmap(const char *dir) {
    int userns = mapping_userns("0 65534 1");
    int tree = (int) syscall(SYS_open_tree, AT_FDCWD, dir, CRUCIBLE_OPEN_TREE_CLONE | O_CLOEXEC);
    if (tree < 0) die("cannot copy the mount of", dir);
    struct crucible_mount_attr attr = {.attr_set = CRUCIBLE_MOUNT_ATTR_IDMAP, .userns_fd = (unsigned long long) userns};
    if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) die("cannot idmap the mount of", dir);
    _exit(0);
}

__attribute__((noreturn)) static void init_forever(void) {
    /* it needs no privilege at all: every capability goes (bounding set first, while CAP_SETPCAP is still held) */
    for (int cap = 0; cap <= 63; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) die("cannot drop capability", NULL);
    }
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capset, &header, data) != 0) die("cannot clear capabilities", NULL);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("cannot set no_new_privs", NULL);
    signal(SIGCHLD, SIG_IGN); /* orphans are reaped by the kernel */
    /* the child waits for this byte: pid 1 holds nothing before its code runs (docs/zygote.md) */
    if (write(3, "1", 1) == 1) close(3);
    for (;;) pause();
}

/* When the host runs out of memory, the kernel's OOM killer takes a sandbox before the server or anything else of
   the host's: the highest score, set while root (it is then also the floor: nothing in the sandbox can lower it),
   inherited by bubblewrap, runsc, the zygote and all they start. Best effort: a kernel without the file kills by size. */
static void oom_first(void) {
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (write(fd, "1000", 4) != 4) { /* refused: the OOM killer goes by size */ }
        close(fd);
    }
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--init") == 0) init_forever();
    oom_first();
    if (argc == 3 && strcmp(argv[1], "--probe-idmap") == 0) probe_idmap(argv[2]);
    const char *seccomp = NULL;
    const char *userns_map = NULL;
    const char *control = NULL;
    struct overlay overlays[MAX_OVERLAYS];
    int overlaid = 0; /* how many */
    memset(overlays, 0, sizeof overlays);
    const char *own_dir = NULL;
    const char *workspace = NULL, *workspace_size = NULL;
    struct copy copies[MAX_COPIES];
    int copied = 0;
    long uid = -1, join = -1;
    int own_netns = 0;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--own-netns") == 0) { own_netns = 1; continue; }
        if (i + 1 >= argc) { errno = EINVAL; die("missing value for", argv[i]); }
        if (strcmp(argv[i], "--netns") == 0) join_netns(argv[++i]);
        else if (strcmp(argv[i], "--cgroup") == 0) join_cgroup(argv[++i]);
        else if (strcmp(argv[i], "--rlimit") == 0) set_rlimit(argv[++i]);
        else if (strcmp(argv[i], "--seccomp") == 0) seccomp = argv[++i];
        else if (strcmp(argv[i], "--uid") == 0) uid = number(argv[++i]);
        else if (strcmp(argv[i], "--control") == 0) control = argv[++i];
        else if (strcmp(argv[i], "--userns-map") == 0) userns_map = argv[++i];
        else if (strcmp(argv[i], "--join") == 0) join = number(argv[++i]);
        else if (strcmp(argv[i], "--overlay-lower") == 0) {
            if (overlaid == MAX_OVERLAYS) { errno = E2BIG; die("too many overlays", argv[i + 1]); }
            overlays[overlaid++].lower = argv[++i];
        } else if (strcmp(argv[i], "--overlay-at") == 0 && overlaid) overlays[overlaid - 1].at = argv[++i];
        else if (strcmp(argv[i], "--overlay-upper") == 0 && overlaid) overlays[overlaid - 1].upper = argv[++i];
        else if (strcmp(argv[i], "--overlay-work") == 0 && overlaid) overlays[overlaid - 1].work = argv[++i];
        else if (strcmp(argv[i], "--own-mounts") == 0) own_dir = argv[++i];
        else if (strcmp(argv[i], "--workspace-tmpfs") == 0) workspace = argv[++i];
        else if (strcmp(argv[i], "--workspace-size") == 0) workspace_size = argv[++i];
        else if (strcmp(argv[i], "--copy-in") == 0 && i + 2 < argc) {
            if (copied == MAX_COPIES) { errno = E2BIG; die("too many --copy-in", argv[i + 1]); }
            copies[copied].from = argv[++i];
            copies[copied++].name = argv[++i];
        }
        else { errno = EINVAL; die("unknown option", argv[i]); }
    }
    if (i + 1 >= argc || seccomp == NULL) { errno = EINVAL; die("usage: [options] --seccomp FILE -- BWRAP ARGS", NULL); }
    int fd = open(seccomp, O_RDONLY);
    if (fd < 0) die("cannot open", seccomp);
    if (fd != 3) {
        if (dup2(fd, 3) != 3) die("cannot dup the seccomp fd", NULL);
        close(fd);
    }
    /* nothing but 0, 1, 2, the seccomp program (and a session's control socket, below) may reach the sandbox: an
     * inherited fd is a way out */
    if (syscall(SYS_close_range, 4, ~0U, 0) != 0) {
        for (int f = 4; f < 1024; f++) close(f);
    }
    if (control != NULL) connect_control(control);
    if (own_dir != NULL) own_mounts(own_dir);
    if (workspace != NULL || copied > 0) {
        if (workspace == NULL || workspace_size == NULL || uid < 0) {
            errno = EINVAL;
            die("--workspace-tmpfs needs --workspace-size and --uid", NULL);
        }
        workspace_tmpfs(workspace, workspace_size, uid, copies, copied);
    }
    pid_t parent = getppid();
    int to_helper[2] = {-1, -1}, from_helper[2] = {-1, -1};
    pid_t helper = -1;
    for (int o = 0; o < overlaid; o++) {
        struct overlay *ov = &overlays[o];
        if (!ov->lower || !ov->at || !ov->upper || !ov->work || !userns_map) {
            errno = EINVAL;
            die("--overlay-lower, --overlay-at, --overlay-upper and --overlay-work go together, with --userns-map", NULL);
        }
        lower_path(ov);
    }
    if (userns_map != NULL) {
        if (uid < 0) { errno = EINVAL; die("--userns-map needs --uid", NULL); }
        if (pipe2(to_helper, O_CLOEXEC) != 0 || pipe2(from_helper, O_CLOEXEC) != 0) die("cannot make a pipe", NULL);
        pid_t self = getpid();
        helper = fork();
        if (helper < 0) die("cannot fork the id map helper", NULL);
        if (helper == 0) { /* still root in the host's namespace: writes the maps once the parent has unshared */
            close(to_helper[1]);
            close(from_helper[0]);
            if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != self) _exit(FAIL);
            char go = 0;
            if (read(to_helper[0], &go, 1) != 1) _exit(FAIL);
            write_map(self, "uid_map", userns_map);
            write_map(self, "gid_map", userns_map);
            char done = 1;
            if (write(from_helper[1], &done, 1) != 1) _exit(FAIL);
            if (overlaid) { /* second round: once the parent has its own mount namespace */
                if (read(to_helper[0], &go, 1) != 1) _exit(FAIL);
                idmap_lowers(self, overlays, overlaid, uid);
                if (write(from_helper[1], &done, 1) != 1) _exit(FAIL);
            }
            _exit(0);
        }
        close(to_helper[0]); /* each side keeps only its own ends: a helper that dies is an end of file here */
        close(from_helper[1]);
    }
    if (own_netns && (userns_map == NULL || join >= 0)) { errno = EINVAL; die("--own-netns needs --userns-map", NULL); }
    if (join >= 0 && (uid < 0 || userns_map != NULL)) { errno = EINVAL; die("--join needs --uid, not --userns-map", NULL); }
    if (uid >= 0) become((uid_t) uid);
    if (join >= 0) join_sandbox(join);
    if (userns_map != NULL) enter_userns(userns_map, to_helper[1], from_helper[0], helper, overlaid);
    if (own_netns && unshare(CLONE_NEWNET) != 0) die("cannot make runsc's network namespace", NULL);
    for (int o = 0; o < overlaid; o++) mount_overlay(&overlays[o]);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("cannot set no_new_privs", NULL);
    /* after the uid change, which clears it; survives the exec of bwrap (not setuid) */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) die("cannot set the parent-death signal", NULL);
    if (getppid() != parent) _exit(FAIL); /* the server died while we started */
    if (setsid() < 0) die("cannot leave the server's session", NULL);
    char *empty[] = {NULL};
    execve(argv[i + 1], argv + i + 1, empty);
    die("cannot exec", argv[i + 1]);
    return FAIL;
}
