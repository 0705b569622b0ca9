/*
 * no_child.c — runs a program where no child process can be made: a seccomp filter (no root
 * needed, inherited across exec) answers clone, clone3, fork and vfork with EAGAIN, as an
 * RLIMIT_NPROC that is used up does, or a sandbox that forbids them. Usage: no_child PROGRAM [ARGS...]
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

#define DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
		 BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAGAIN)

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: no_child PROGRAM [ARGS...]\n");
		return 2;
	}
#ifndef ARCH
	fprintf(stderr, "no_child: no filter written for this architecture\n");
	return 77;
#else
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), /* another ABI: not filtered */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		DENY(SYS_clone),
		DENY(SYS_clone3),
#ifdef SYS_fork
		DENY(SYS_fork),
		DENY(SYS_vfork),
#endif
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("no_child: seccomp");
		return 77; /* the kernel has no seccomp filters: the caller skips */
	}
	execvp(argv[1], argv + 1);
	perror("no_child: exec");
	return 127;
#endif
}
