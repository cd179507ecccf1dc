// SPDX-License-Identifier: GPL-2.0
/*
 * rkp_postregs: the registers that post-handlers see, for the post-handler
 * register sweep of tools/testing/guest/58-optprobes-sweep.sh. A client of
 * include/rkprobes.h with probes that have a post-handler and no
 * pre-handler; each post-handler keeps the registers of its first hit by one
 * task in each of a few phases (rounds of the same calls: int3 hits, hits
 * through the jump). /sys/kernel/debug/rkp_postregs takes one command a
 * write:
 *
 *   add SYM OFF   a probe at SYM+OFF (at most RKP_POSTREGS_MAX)
 *   pid PID       only hits by the task PID are kept
 *   phase N       hits from now on are kept as phase N (0..RKP_POSTREGS_PHASES-1)
 *   retake N      forgets what phase N kept, for another try
 *   clear         unregisters every probe and forgets what was kept
 *
 * Reading gives one line per probe, "rg_SYM_OFF flags=F", F the probe's
 * flags (4: optimized), then one line per phase kept:
 * "N rg_SYM_OFF: op=0xB ip=... sp=... fl=... cs=... oa=... ax=... ... r15=...",
 * B the first byte at the probe when the post-handler ran (0xcc: an int3
 * hit; 0xe9: through the jump).
 */
#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <rkprobes.h>

#define RKP_POSTREGS_MAX	64
#define RKP_POSTREGS_PHASES	5

struct rkp_postregs_rec {
	struct pt_regs regs;
	u8 op;
};

struct rkp_postregs_probe {
	struct rkp_kprobe kp;
	char name[KSYM_NAME_LEN + 16];
	char sym[KSYM_NAME_LEN];
	atomic_t taken[RKP_POSTREGS_PHASES];
	/* Set (release) after rec[N] is written. */
	int valid[RKP_POSTREGS_PHASES];
	struct rkp_postregs_rec rec[RKP_POSTREGS_PHASES];
};

static DEFINE_MUTEX(rkp_postregs_lock);
static struct dentry *rkp_postregs_file;
/* Under rkp_postregs_lock; read by the post-handlers while registered. */
static struct rkp_postregs_probe *rkp_postregs_probes[RKP_POSTREGS_MAX];
static int rkp_postregs_n;
static pid_t rkp_postregs_pid = -1;
static int rkp_postregs_phase;

static void rkp_postregs_post(struct rkp_kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	struct rkp_postregs_probe *pp = container_of(p, struct rkp_postregs_probe, kp);
	int phase = READ_ONCE(rkp_postregs_phase);
	u8 op = 0;

	if (current->pid != READ_ONCE(rkp_postregs_pid))
		return;
	if (atomic_cmpxchg(&pp->taken[phase], 0, 1))
		return;
	if (copy_from_kernel_nofault(&op, p->addr, 1))
		op = 0;
	pp->rec[phase].regs = *regs;
	pp->rec[phase].op = op;
	smp_store_release(&pp->valid[phase], 1);
}

/* Under rkp_postregs_lock. */
static void rkp_postregs_clear(void)
{
	int i;

	for (i = 0; i < rkp_postregs_n; i++) {
		rkp_unregister_kprobe(&rkp_postregs_probes[i]->kp);
		kfree(rkp_postregs_probes[i]);
		rkp_postregs_probes[i] = NULL;
	}
	rkp_postregs_n = 0;
	WRITE_ONCE(rkp_postregs_phase, 0);
}

/* Under rkp_postregs_lock. */
static int rkp_postregs_add(const char *sym, unsigned int off)
{
	struct rkp_postregs_probe *pp;
	int ret;

	if (rkp_postregs_n == RKP_POSTREGS_MAX)
		return -ENOSPC;
	pp = kzalloc(sizeof(*pp), GFP_KERNEL);
	if (!pp)
		return -ENOMEM;
	strscpy(pp->sym, sym);
	snprintf(pp->name, sizeof(pp->name), "rg_%s_%u", sym, off);
	pp->kp.symbol_name = pp->sym;
	pp->kp.offset = off;
	pp->kp.post_handler = rkp_postregs_post;
	ret = rkp_register_kprobe(&pp->kp);
	if (ret) {
		kfree(pp);
		return ret;
	}
	rkp_postregs_probes[rkp_postregs_n++] = pp;
	return 0;
}

static long rkp_postregs_command(char *cmd)
{
	char *argv[3];
	unsigned int off;
	int argc = 0, n, i;

	while (argc < 3 && (argv[argc] = strsep(&cmd, " \n")))
		if (*argv[argc])
			argc++;
	if (argc == 1 && !strcmp(argv[0], "clear")) {
		rkp_postregs_clear();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[0], "pid")) {
		if (kstrtoint(argv[1], 0, &n))
			return -EINVAL;
		WRITE_ONCE(rkp_postregs_pid, n);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[0], "phase")) {
		if (kstrtoint(argv[1], 0, &n) || n < 0 || n >= RKP_POSTREGS_PHASES)
			return -EINVAL;
		WRITE_ONCE(rkp_postregs_phase, n);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[0], "retake")) {
		if (kstrtoint(argv[1], 0, &n) || n < 0 || n >= RKP_POSTREGS_PHASES)
			return -EINVAL;
		for (i = 0; i < rkp_postregs_n; i++) {
			WRITE_ONCE(rkp_postregs_probes[i]->valid[n], 0);
			atomic_set_release(&rkp_postregs_probes[i]->taken[n], 0);
		}
		return 0;
	}
	if (argc == 3 && !strcmp(argv[0], "add")) {
		if (kstrtouint(argv[2], 0, &off) || strlen(argv[1]) >= KSYM_NAME_LEN)
			return -EINVAL;
		return rkp_postregs_add(argv[1], off);
	}
	return -EINVAL;
}

static ssize_t rkp_postregs_write(struct file *file, const char __user *ubuf, size_t count,
				  loff_t *ppos)
{
	char buf[KSYM_NAME_LEN + 32];
	long ret;

	if (count >= sizeof(buf))
		return -E2BIG;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = 0;
	mutex_lock(&rkp_postregs_lock);
	ret = rkp_postregs_command(buf);
	mutex_unlock(&rkp_postregs_lock);
	return ret < 0 ? ret : count;
}

static int rkp_postregs_show(struct seq_file *m, void *v)
{
	int i, ph;

	mutex_lock(&rkp_postregs_lock);
	for (i = 0; i < rkp_postregs_n; i++) {
		struct rkp_postregs_probe *pp = rkp_postregs_probes[i];

		seq_printf(m, "%s flags=%u\n", pp->name, READ_ONCE(pp->kp.flags));
		for (ph = 0; ph < RKP_POSTREGS_PHASES; ph++) {
			const struct pt_regs *r = &pp->rec[ph].regs;

			if (!smp_load_acquire(&pp->valid[ph]))
				continue;
			seq_printf(m, "%d %s: op=0x%x ip=0x%lx sp=0x%lx fl=0x%lx cs=0x%lx oa=0x%lx",
				   ph, pp->name, pp->rec[ph].op, r->ip, r->sp, r->flags, (unsigned long)r->cs,
				   r->orig_ax);
			seq_printf(m, " ax=0x%lx bx=0x%lx cx=0x%lx dx=0x%lx si=0x%lx di=0x%lx bp=0x%lx",
				   r->ax, r->bx, r->cx, r->dx, r->si, r->di, r->bp);
			seq_printf(m, " r8=0x%lx r9=0x%lx r10=0x%lx r11=0x%lx r12=0x%lx r13=0x%lx",
				   r->r8, r->r9, r->r10, r->r11, r->r12, r->r13);
			seq_printf(m, " r14=0x%lx r15=0x%lx\n", r->r14, r->r15);
		}
	}
	mutex_unlock(&rkp_postregs_lock);
	return 0;
}

static int rkp_postregs_open(struct inode *inode, struct file *file)
{
	return single_open_size(file, rkp_postregs_show, NULL, 1 << 16);
}

static const struct file_operations rkp_postregs_fops = {
	.owner = THIS_MODULE,
	.open = rkp_postregs_open,
	.read = seq_read,
	.write = rkp_postregs_write,
	.llseek = seq_lseek,
	.release = single_release,
};

static int __init rkp_postregs_init(void)
{
	rkp_postregs_file = debugfs_create_file("rkp_postregs", 0600, NULL, NULL,
						&rkp_postregs_fops);
	return IS_ERR(rkp_postregs_file) ? PTR_ERR(rkp_postregs_file) : 0;
}

static void __exit rkp_postregs_exit(void)
{
	debugfs_remove(rkp_postregs_file);
	mutex_lock(&rkp_postregs_lock);
	rkp_postregs_clear();
	mutex_unlock(&rkp_postregs_lock);
}

module_init(rkp_postregs_init);
module_exit(rkp_postregs_exit);
MODULE_DESCRIPTION("rkprobes test: registers seen by post-handlers");
MODULE_LICENSE("GPL");
