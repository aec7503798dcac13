/*
 * The set-up of a zygote's child before any of its request's code runs (docs/zygote.md, step 4), loaded by the Python
 * zygote (agents/python-zygote) with ctypes and called once in each forked child. It is C because the child is a
 * copy-on-write image of the zygote: the same steps written in Python wrote to hundreds of the zygote's pages (reference
 * counts, ctypes' argument objects, the text of /proc files) and cost about as much CPU as the program itself. Here the
 * child touches its stack and this library's data only.
 *
 * crucible_zygote_child(request, error, size) runs, in this order, and stops at the first failure (returning -1 with
 * a sentence in `error`; the caller writes it to the run's stderr and exits 125):
 *
 *   1. stdio: the run's pipe ends become 0, 1 and 2; "0" (the writer itself) goes into each cgroup.procs descriptor,
 *      before anything else can fork; setsid (its own session and process group, as bwrap --new-session);
 *   2. namespaces: its own mount, IPC, UTS and cgroup namespaces (cgroup paths start at its own groups), and the
 *      network namespace the zygote gave it (one no live process is in);
 *   3. mounts: nothing shared with the zygote's (MS_PRIVATE), the control directory unmounted, a fresh /proc with
 *      /proc/sys, sysrq-trigger, irq and bus read-only (as bwrap --proc), fresh tmpfs /tmp, /workspace and /dev/shm
 *      owned by the slot's uid, its own /dev/pts; then every writable mount is checked to be one of those;
 *   4. the namespace's init has dropped every capability (it closes the pipe whose read end the child holds); every
 *      descriptor above 2 closed, then the rlimits;
 *   5. the slot's uid: leaving uid 0 clears every capability of the zygote's namespace; a user namespace of its own
 *      maps that uid to 1000 (what a spawned sandbox's program sees); its bounding set is emptied (creating the
 *      namespace filled it) and every capability set cleared, then checked empty in /proc/self/status;
 *   6. no_new_privs; a Landlock domain scoping abstract unix sockets and signals (when asked: Landlock ABI 6); the
 *      sandbox's seccomp program; dumpable again (its own memory only, as `python3 main.py`).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <dirent.h>

#define MAX_PROCS 8
#define MAX_RLIMITS 8
#define INSIDE_UID 1000
#define SLOT_UIDS 4096 /* a child's uid in the zygote's namespace: INSIDE_UID + slot, never 0 (the zygote's) */

/* stat through the system call: the library then needs no glibc symbol newer than the oldest hosts have */
static int stat_of(const char *path, struct stat *st) {
    return (int)syscall(SYS_newfstatat, AT_FDCWD, path, st, 0);
}

/* what the zygote fills in before it forks (ctypes.Structure of the same layout in agents/python-zygote) */
struct crucible_child {
    int32_t stdio[3];
    int32_t procs[MAX_PROCS];
    int32_t nprocs;
    int32_t netns;
    int32_t uid;
    int32_t nrlimits;
    int32_t rlimit_resource[MAX_RLIMITS];
    int64_t rlimit_value[MAX_RLIMITS];
    int64_t tmpfs_bytes;
    int32_t landlock_scope;
    int32_t init_ready; /* read end of a pipe whose only writer is the namespace's init: EOF once it holds nothing */
    const char *control_dir;
    const struct sock_fprog *seccomp;
};

struct failure {
    char *text;
    size_t size;
};

static int fail(struct failure *f, const char *format, ...) {
    int saved = errno;
    va_list args;
    va_start(args, format);
    int n = vsnprintf(f->text, f->size, format, args);
    va_end(args);
    if (n >= 0 && (size_t)n < f->size && saved != 0) snprintf(f->text + n, f->size - n, ": %s", strerror(saved));
    return -1;
}

static int write_all(int fd, const char *text) {
    size_t length = strlen(text);
    return write(fd, text, length) == (ssize_t)length ? 0 : -1;
}

static int write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = write_all(fd, text);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* the whole of a small /proc file, NUL-terminated, or -1 */
static ssize_t read_file(const char *path, char *buffer, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t used = 0;
    for (;;) {
        if (used + 1 >= size) {
            close(fd);
            errno = EFBIG;
            return -1;
        }
        ssize_t n = read(fd, buffer + used, size - 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        if (n == 0) break;
        used += (size_t)n;
    }
    close(fd);
    buffer[used] = '\0';
    return (ssize_t)used;
}

static int stdio_and_groups(const struct crucible_child *c, struct failure *f) {
    for (int i = 0; i < 3; i++) {
        if (dup2(c->stdio[i], i) < 0) return fail(f, "dup2");
    }
    for (int i = 0; i < c->nprocs; i++) {
        if (write(c->procs[i], "0", 1) != 1) return fail(f, "cannot join its cgroup");
        close(c->procs[i]);
    }
    if (setsid() < 0) return fail(f, "setsid");
    return 0;
}

static int namespaces(const struct crucible_child *c, struct failure *f) {
    if (unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP) != 0) return fail(f, "unshare");
    if (setns(c->netns, CLONE_NEWNET) != 0) return fail(f, "setns net");
    return 0;
}

static int mount_or_fail(const char *source, const char *target, const char *type, unsigned long flags,
                         const char *data, struct failure *f) {
    if (mount(source, target, type, flags, data) != 0) return fail(f, "mount %s", target);
    return 0;
}

/* a field of a mountinfo line: the n-th (from 0) space-separated one, copied into out with the kernel's octal escapes
   (\040 for a space, \011, \012, \134) decoded */
static const char *field(const char *line, int n, char *out, size_t size) {
    const char *p = line;
    for (int i = 0; i < n; i++) {
        p = strchr(p, ' ');
        if (p == NULL) return NULL;
        p++;
    }
    size_t length = strcspn(p, " \n");
    size_t o = 0;
    for (size_t i = 0; i < length; i++) {
        if (o + 1 >= size) return NULL;
        if (p[i] == '\\' && i + 3 < length && p[i + 1] >= '0' && p[i + 1] <= '3' && p[i + 2] >= '0'
                && p[i + 2] <= '7' && p[i + 3] >= '0' && p[i + 3] <= '7') {
            out[o++] = (char)(((p[i + 1] - '0') << 6) | ((p[i + 2] - '0') << 3) | (p[i + 3] - '0'));
            i += 3;
        } else {
            out[o++] = p[i];
        }
    }
    out[o] = '\0';
    return out;
}

static int has_option(const char *options, const char *wanted) {
    size_t n = strlen(wanted);
    for (const char *p = options;;) {
        if (strncmp(p, wanted, n) == 0 && (p[n] == ',' || p[n] == '\0')) return 1;
        p = strchr(p, ',');
        if (p == NULL) return 0;
        p++;
    }
}

/* every writable mount is one of the child's own (its tmpfs, proc, devpts) or a device node: nothing it writes can
   reach a sibling */
static int only_own_writable_mounts(struct failure *f) {
    static char info[256 * 1024]; /* untouched (no page) beyond what the file fills */
    if (read_file("/proc/self/mountinfo", info, sizeof info) < 0) return fail(f, "read /proc/self/mountinfo");
    for (char *line = info; *line != '\0';) {
        char *end = strchr(line, '\n');
        if (end != NULL) *end = '\0';
        char point[4096], options[1024], type[256];
        const char *dash = strstr(line, " - ");
        if (dash == NULL || field(line, 4, point, sizeof point) == NULL || field(line, 5, options, sizeof options) == NULL
                || field(dash + 3, 0, type, sizeof type) == NULL) {
            errno = 0;
            return fail(f, "cannot read its mounts");
        }
        if (has_option(options, "rw") && strcmp(type, "proc") != 0 && strcmp(type, "sysfs") != 0
                && strcmp(type, "devpts") != 0 && strcmp(point, "/tmp") != 0 && strcmp(point, "/workspace") != 0
                && strcmp(point, "/dev/shm") != 0) {
            struct stat st;
            if (stat_of(point, &st) != 0 || !S_ISCHR(st.st_mode)) {
                errno = 0;
                return fail(f, "a writable mount shared with the zygote: %s", point);
            }
        }
        if (end == NULL) break;
        line = end + 1;
    }
    return 0;
}

static int fresh_mounts(const struct crucible_child *c, struct failure *f) {
    if (mount_or_fail(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL, f) != 0) return -1;
    if (umount2(c->control_dir, MNT_DETACH) != 0) return fail(f, "umount %s", c->control_dir);
    if (mount_or_fail("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, f) != 0) return -1;
    static const char *const covered[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"};
    for (size_t i = 0; i < sizeof covered / sizeof covered[0]; i++) { /* read-only, as bwrap --proc covers them */
        if (access(covered[i], F_OK) != 0) continue;
        if (mount_or_fail(covered[i], covered[i], NULL, MS_BIND | MS_REC, NULL, f) != 0
                || mount_or_fail(NULL, covered[i], NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV
                        | MS_NOEXEC, NULL, f) != 0) {
            return -1;
        }
    }
    static const char *const fresh[][2] = {{"/tmp", "755"}, {"/workspace", "755"}, {"/dev/shm", "1777"}};
    for (size_t i = 0; i < sizeof fresh / sizeof fresh[0]; i++) {
        char data[160];
        snprintf(data, sizeof data, "size=%lld,mode=%s,uid=%d,gid=%d", (long long)c->tmpfs_bytes, fresh[i][1], c->uid,
                 c->uid);
        if (mount_or_fail("tmpfs", fresh[i][0], "tmpfs", MS_NOSUID | MS_NODEV, data, f) != 0) return -1;
    }
    struct stat st;
    if (stat_of("/dev/pts", &st) == 0 && S_ISDIR(st.st_mode) /* its own terminals: a sibling's pty is not even listed */
            && mount_or_fail("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                             "newinstance,ptmxmode=0666,mode=620", f) != 0) {
        return -1;
    }
    if (chdir("/workspace") != 0) return fail(f, "chdir /workspace");
    return only_own_writable_mounts(f);
}

/* closes every descriptor above 2, whatever its number: close_range, or (before Linux 5.9) each one /proc lists */
static int close_above_stdio(struct failure *f) {
    if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0) return 0;
    if (errno != ENOSYS) return fail(f, "close_range");
    for (int round = 0; round < 2; round++) { /* the second round finds nothing left but the listing itself */
        DIR *dir = opendir("/proc/self/fd");
        if (dir == NULL) return fail(f, "cannot list its descriptors");
        int own = dirfd(dir), others = 0;
        for (struct dirent *e; (e = readdir(dir)) != NULL;) {
            int fd = atoi(e->d_name);
            if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && fd > 2 && fd != own) {
                close(fd);
                others++;
            }
        }
        closedir(dir);
        if (others == 0) return 0;
    }
    errno = 0;
    return fail(f, "descriptors are left open");
}

/* every zygote descriptor closed before the rlimits (a lower RLIMIT_NOFILE must not hide one above it) */
static int descriptors_and_limits(const struct crucible_child *c, struct failure *f) {
    if (close_above_stdio(f) != 0) return -1;
    for (int i = 0; i < c->nrlimits; i++) {
        struct rlimit limit = {(rlim_t)c->rlimit_value[i], (rlim_t)c->rlimit_value[i]};
        if (setrlimit(c->rlimit_resource[i], &limit) != 0) return fail(f, "setrlimit %d", c->rlimit_resource[i]);
    }
    return 0;
}

static int become(const struct crucible_child *c, struct failure *f) {
    if (setgroups(0, NULL) != 0) return fail(f, "setgroups");
    if (setresgid(c->uid, c->uid, c->uid) != 0) return fail(f, "setresgid");
    if (setresuid(c->uid, c->uid, c->uid) != 0) return fail(f, "setresuid");
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) return fail(f, "dumpable"); /* the uid change cleared it */
    if (unshare(CLONE_NEWUSER) != 0) return fail(f, "unshare user");
    char map[64];
    snprintf(map, sizeof map, "%d %d 1\n", INSIDE_UID, c->uid);
    if (write_file("/proc/self/uid_map", map) != 0) return fail(f, "uid_map");
    if (write_file("/proc/self/setgroups", "deny") != 0) return fail(f, "setgroups deny");
    if (write_file("/proc/self/gid_map", map) != 0) return fail(f, "gid_map");
    for (int cap = 0; cap <= 63; cap++) { /* a new user namespace comes with a full bounding set: empty it */
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
            if (errno == EINVAL) break; /* past the kernel's last capability */
            return fail(f, "drop capability %d", cap);
        }
    }
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capset, &header, data) != 0) return fail(f, "capset");
    uid_t r, e, s;
    if (getresuid(&r, &e, &s) != 0 || r != INSIDE_UID || e != INSIDE_UID || s != INSIDE_UID) {
        errno = 0;
        return fail(f, "uid switch did not hold");
    }
    char status[8192];
    if (read_file("/proc/self/status", status, sizeof status) < 0) return fail(f, "read /proc/self/status");
    static const char *const sets[] = {"\nCapInh:", "\nCapPrm:", "\nCapEff:", "\nCapBnd:", "\nCapAmb:"};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        const char *line = strstr(status, sets[i]);
        errno = 0;
        if (line == NULL) return fail(f, "no %s in /proc/self/status", sets[i] + 1);
        if (strtoull(line + strlen(sets[i]), NULL, 16) != 0) return fail(f, "a capability is left: %s", sets[i] + 1);
    }
    return 0;
}

struct landlock_ruleset_attr_v6 {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

/* the namespace's init holds no capability any more: it writes one byte once it has dropped them (an init that failed
   writes none and exits, which ends the namespace): pid 1 holds nothing before any code of the request runs */
static int init_holds_nothing(const struct crucible_child *c, struct failure *f) {
    char byte = 0;
    ssize_t n;
    while ((n = read(c->init_ready, &byte, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1 || byte != '1') {
        errno = 0;
        return fail(f, "the namespace's init did not start");
    }
    close(c->init_ready);
    return 0;
}

static int walls(const struct crucible_child *c, struct failure *f) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail(f, "no_new_privs");
    if (c->landlock_scope) { /* LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL */
        struct landlock_ruleset_attr_v6 attr = {0, 0, 1 | 2};
        long fd = syscall(444 /* landlock_create_ruleset */, &attr, sizeof attr, 0);
        if (fd < 0) return fail(f, "landlock_create_ruleset");
        long rc = syscall(446 /* landlock_restrict_self */, fd, 0);
        int saved = errno;
        close((int)fd);
        errno = saved;
        if (rc != 0) return fail(f, "landlock_restrict_self");
    }
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, c->seccomp, 0, 0) != 0) return fail(f, "seccomp");
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) return fail(f, "dumpable");
    return 0;
}

int crucible_zygote_child(const struct crucible_child *c, char *error, size_t size) {
    struct failure f = {error, size};
    if (c->nprocs < 0 || c->nprocs > MAX_PROCS || c->nrlimits < 0 || c->nrlimits > MAX_RLIMITS
            || c->uid < INSIDE_UID || c->uid >= INSIDE_UID + SLOT_UIDS || c->tmpfs_bytes <= 0) {
        errno = EINVAL;
        return fail(&f, "a malformed request");
    }
    for (int i = 0; i < c->nrlimits; i++) {
        if (c->rlimit_value[i] < 0) {
            errno = EINVAL;
            return fail(&f, "a malformed request");
        }
    }
    /* the init's pipe end is read before the descriptors are closed, and only then: it is one of them */
    if (stdio_and_groups(c, &f) != 0 || namespaces(c, &f) != 0 || fresh_mounts(c, &f) != 0
            || init_holds_nothing(c, &f) != 0 || descriptors_and_limits(c, &f) != 0 || become(c, &f) != 0
            || walls(c, &f) != 0) {
        return -1;
    }
    return 0;
}
