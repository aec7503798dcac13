/*
 * crucible-init: the init (pid 1) of a zygote child's pid namespace (docs/zygote.md). The zygote spawns one per request,
 * so it is built without a C library: no start-up code at all (a static glibc's start-up probes the CPU with cpuid,
 * which traps to the hypervisor on a virtual machine, and cost more than everything else this process does).
 *
 * It holds nothing and keeps no capability: it drops those in its bounding set (reading the set first: every drop
 * allocates new credentials), clears its capability sets and sets no_new_privs, then writes one byte to descriptor 3
 * and closes it: the write end of a pipe the namespace's child reads before any of its code runs. It ignores SIGCHLD (the kernel reaps every
 * orphan), handles no signal (so nothing inside its namespace can signal it) and waits until the zygote kills it,
 * which ends the namespace and everything in it. Arguments are ignored. Exit code 125 means a step failed.
 *
 * Built by scripts/build-launch.sh with -nostdlib for x86_64 and aarch64; without it the zygote runs
 * `crucible-launch --init`, the same steps behind glibc's start-up.
 */
#include <linux/capability.h>
#include <linux/prctl.h>
#include <asm/unistd.h>

#define FAIL 125
#define SIGCHLD_NUMBER 17
#define SIG_IGN_HANDLER 1UL
#define READY_FD 3 /* the write end of a pipe whose read end the namespace's child holds (none: EBADF, ignored) */

static long sys6(long n, long a, long b, long c, long d, long e) {
#if defined(__x86_64__)
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
    return ret;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
    return x0;
#else
#error "crucible-init: x86_64 and aarch64 only"
#endif
}

__attribute__((noreturn)) static void quit(int code) {
    for (;;) sys6(__NR_exit_group, code, 0, 0, 0, 0);
}

/* the kernel's struct sigaction for rt_sigaction: handler, flags, restorer, mask (no restorer: SIG_IGN never runs) */
struct kernel_sigaction {
    unsigned long handler;
    unsigned long flags;
    unsigned long restorer;
    unsigned long mask;
};

#if defined(__x86_64__)
__attribute__((force_align_arg_pointer))
#endif
__attribute__((noreturn, used)) void _start(void) {
    for (long cap = 0; cap <= 63; cap++) {
        long held = sys6(__NR_prctl, PR_CAPBSET_READ, cap, 0, 0, 0);
        if (held == -22) break; /* EINVAL: past the kernel's last capability */
        if (held < 0) quit(FAIL);
        if (held == 1 && sys6(__NR_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) quit(FAIL);
    }
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2] = {{0, 0, 0}, {0, 0, 0}};
    if (sys6(__NR_capset, (long)&header, (long)data, 0, 0, 0) != 0) quit(FAIL);
    if (sys6(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) quit(FAIL);
    struct kernel_sigaction ignore = {SIG_IGN_HANDLER, 0, 0, 0};
    if (sys6(__NR_rt_sigaction, SIGCHLD_NUMBER, (long)&ignore, 0, sizeof ignore.mask, 0) != 0) quit(FAIL);
    /* the child waits for this byte: pid 1 holds nothing before its code runs (an init that failed sends none) */
    sys6(__NR_write, READY_FD, (long)"1", 1, 0, 0);
    sys6(__NR_close, READY_FD, 0, 0, 0, 0);
    for (;;) sys6(__NR_ppoll, 0, 0, 0, 0, 0); /* no descriptors, no timeout: sleeps until killed */
}
