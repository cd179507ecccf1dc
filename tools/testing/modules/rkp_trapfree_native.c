// SPDX-License-Identifier: GPL-2.0
/*
 * rkp_trapfree's control file and the kernel's kprobes side
 * (rkp_trapfree_main.rs holds rkprobes' side). One probe at a time, on one
 * side, with an empty pre-handler that only counts its hits (one atomic
 * increment, as rkprobes' side does) and, on request, an empty
 * post-handler. /sys/kernel/debug/rkp_trapfree takes one command a write:
 *
 *   k SYM OFF POST    the kernel's kprobe at SYM+OFF (POST 1: with a
 *                     post-handler); the previous probe is removed first
 *   rk SYM OFF POST   the same with rkprobes
 *   wait              waits until the probe's jump is in the text (the
 *                     first byte at the probe is 0xe9): for the kernel's,
 *                     written only when its list shows it [OPTIMIZED];
 *                     rkprobes' first gets a tenth of a second to be
 *                     queued (its optimizer runs 5 jiffies after arming)
 *   off               removes the probe
 *   size SYM          the size of SYM (from sprint_symbol())
 *
 * A failed command's write returns its errno. Reading gives "hits H",
 * the hits counted since load, and the last command's result: "at ADDR"
 * (the probed address), "size N", "wait N ms", or "none".
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/uaccess.h>
#include "native_kprobe.h"

/* Called from rkp_trapfree_main.rs. */
int rkp_trapfree_native_init(void);
void rkp_trapfree_native_exit(void);
/* rkprobes' side, in rkp_trapfree_main.rs; called under rkp_trapfree_lock. */
long rkp_trapfree_rk_arm(const char *sym, unsigned int off, int post);
void rkp_trapfree_rk_disarm(void);
int rkp_trapfree_rk_optimized(void);
long rkp_trapfree_rk_hits(void);

static DEFINE_MUTEX(rkp_trapfree_lock);
static struct dentry *rkp_trapfree_file;
static atomic_long_t rkp_trapfree_hits;
/* Under rkp_trapfree_lock: the probe of each side, the probed address. */
static struct kprobe *rkp_trapfree_kp;
static bool rkp_trapfree_rk;
static unsigned long rkp_trapfree_at;
static char rkp_trapfree_result[64] = "none";

#ifdef CONFIG_KPROBES
static int rkp_trapfree_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_long_inc(&rkp_trapfree_hits);
	return 0;
}

static void rkp_trapfree_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
}

static long rkp_trapfree_k_arm(const char *sym, unsigned int off, int post)
{
	struct kprobe *kp = kzalloc(sizeof(*kp), GFP_KERNEL);
	int ret;

	if (!kp)
		return -ENOMEM;
	kp->symbol_name = sym;
	kp->offset = off;
	kp->pre_handler = rkp_trapfree_pre;
	if (post)
		kp->post_handler = rkp_trapfree_post;
	ret = register_kprobe(kp);
	if (ret) {
		kfree(kp);
		return ret;
	}
	/* symbol_name points into the command buffer. */
	kp->symbol_name = NULL;
	rkp_trapfree_kp = kp;
	return (long)kp->addr;
}
#else
static long rkp_trapfree_k_arm(const char *sym, unsigned int off, int post)
{
	return -EOPNOTSUPP;
}
#endif

/* Removes the probe of either side. Under rkp_trapfree_lock. */
static void rkp_trapfree_disarm(void)
{
	if (rkp_trapfree_kp) {
		rkp_native_kprobe_free(rkp_trapfree_kp);
		rkp_trapfree_kp = NULL;
	}
	if (rkp_trapfree_rk) {
		rkp_trapfree_rk_disarm();
		rkp_trapfree_rk = false;
	}
	rkp_trapfree_at = 0;
}

static u8 rkp_trapfree_first_byte(void)
{
	u8 b = 0;

	if (copy_from_kernel_nofault(&b, (void *)rkp_trapfree_at, 1))
		return 0;
	return b;
}

/* The "wait" command: milliseconds until the jump was in, or -ETIME. */
static long rkp_trapfree_wait(void)
{
	long ms = 0;

	if (!rkp_trapfree_at)
		return -ENOENT;
	if (rkp_trapfree_rk) {
		while (!rkp_trapfree_rk_optimized()) {
			if (ms >= 100)
				return -ETIME;
			msleep(10);
			ms += 10;
		}
	}
	while (rkp_trapfree_first_byte() != 0xe9) {
		if (ms >= 5000)
			return -ETIME;
		msleep(10);
		ms += 10;
	}
	return ms;
}

/*
 * The "size" command: SYM's size, through a probe at its first byte. The
 * arming functions return the probed address, or an errno (IS_ERR_VALUE).
 */
static long rkp_trapfree_size(const char *sym)
{
	char buf[KSYM_SYMBOL_LEN], *slash;
	unsigned long size;
	long at;

	/* rkprobes' probe when the kernel has no kprobes. */
	at = rkp_trapfree_k_arm(sym, 0, 0);
	if (IS_ERR_VALUE(at)) {
		at = rkp_trapfree_rk_arm(sym, 0, 0);
		rkp_trapfree_rk = !IS_ERR_VALUE(at);
	}
	if (IS_ERR_VALUE(at))
		return at;
	rkp_trapfree_at = at;
	sprint_symbol(buf, at);
	rkp_trapfree_disarm();
	slash = strrchr(buf, '/');
	if (!slash || kstrtoul(slash + 1, 16, &size))
		return -EINVAL;
	return size;
}

static long rkp_trapfree_command(char *cmd)
{
	char *argv[4];
	unsigned int off, post;
	int argc = 0;
	long ret;

	while (argc < 4 && (argv[argc] = strsep(&cmd, " \n")))
		if (*argv[argc])
			argc++;
	if (argc == 1 && !strcmp(argv[0], "off")) {
		rkp_trapfree_disarm();
		strscpy(rkp_trapfree_result, "none");
		return 0;
	}
	if (argc == 1 && !strcmp(argv[0], "wait")) {
		ret = rkp_trapfree_wait();
		if (ret >= 0)
			scnprintf(rkp_trapfree_result, sizeof(rkp_trapfree_result), "wait %ld ms", ret);
		return ret < 0 ? ret : 0;
	}
	if (argc == 2 && !strcmp(argv[0], "size")) {
		rkp_trapfree_disarm();
		ret = rkp_trapfree_size(argv[1]);
		if (ret >= 0)
			scnprintf(rkp_trapfree_result, sizeof(rkp_trapfree_result), "size %ld", ret);
		return ret < 0 ? ret : 0;
	}
	if (argc != 4 || kstrtouint(argv[2], 0, &off) || kstrtouint(argv[3], 0, &post))
		return -EINVAL;
	rkp_trapfree_disarm();
	if (!strcmp(argv[0], "k")) {
		ret = rkp_trapfree_k_arm(argv[1], off, post);
	} else if (!strcmp(argv[0], "rk")) {
		ret = rkp_trapfree_rk_arm(argv[1], off, post);
		rkp_trapfree_rk = !IS_ERR_VALUE(ret);
	} else {
		return -EINVAL;
	}
	/* An address, or an errno. */
	if (IS_ERR_VALUE(ret))
		return ret;
	rkp_trapfree_at = ret;
	scnprintf(rkp_trapfree_result, sizeof(rkp_trapfree_result), "at %px", (void *)ret);
	return 0;
}

static ssize_t rkp_trapfree_write(struct file *file, const char __user *ubuf, size_t count,
				  loff_t *ppos)
{
	char buf[160];
	long ret;

	if (count >= sizeof(buf))
		return -E2BIG;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = 0;
	mutex_lock(&rkp_trapfree_lock);
	ret = rkp_trapfree_command(buf);
	mutex_unlock(&rkp_trapfree_lock);
	return ret < 0 ? ret : count;
}

static ssize_t rkp_trapfree_read(struct file *file, char __user *ubuf, size_t count,
				 loff_t *ppos)
{
	char buf[128];
	int n;

	mutex_lock(&rkp_trapfree_lock);
	n = scnprintf(buf, sizeof(buf), "hits %ld\n%s\n",
		      atomic_long_read(&rkp_trapfree_hits) + rkp_trapfree_rk_hits(),
		      rkp_trapfree_result);
	mutex_unlock(&rkp_trapfree_lock);
	return simple_read_from_buffer(ubuf, count, ppos, buf, n);
}

static const struct file_operations rkp_trapfree_fops = {
	.owner = THIS_MODULE,
	.write = rkp_trapfree_write,
	.read = rkp_trapfree_read,
	.llseek = default_llseek,
};

int rkp_trapfree_native_init(void)
{
	rkp_trapfree_file = debugfs_create_file("rkp_trapfree", 0600, NULL, NULL,
						&rkp_trapfree_fops);
	return IS_ERR(rkp_trapfree_file) ? PTR_ERR(rkp_trapfree_file) : 0;
}

void rkp_trapfree_native_exit(void)
{
	debugfs_remove(rkp_trapfree_file);
	mutex_lock(&rkp_trapfree_lock);
	rkp_trapfree_disarm();
	mutex_unlock(&rkp_trapfree_lock);
}
