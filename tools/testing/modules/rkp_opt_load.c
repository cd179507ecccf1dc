// SPDX-License-Identifier: GPL-2.0
/*
 * Load for rkp_opt_test (rkp_opt_main.rs): one kthread per online CPU calls
 * the probe targets of rkp_opt_targets.S in a loop and checks every result,
 * while the test optimizes and unoptimizes their probes.
 */
#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/delay.h>
#include <linux/sched.h>
#include <linux/slab.h>

u64 rkp_opt_target(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f);
u64 rkp_opt_target2(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f);

/* Called from rkp_opt_main.rs. */
int rkp_opt_load_start(void);
void rkp_opt_load_stop(u64 *calls, u64 *calls2, u64 *bad);

#define RKP_OPT_MAX_THREADS 8

static struct task_struct *rkp_opt_threads[RKP_OPT_MAX_THREADS];
static atomic64_t rkp_opt_calls, rkp_opt_calls2, rkp_opt_bad;

static int rkp_opt_loadfn(void *arg)
{
	u64 i = (unsigned long)arg;

	while (!kthread_should_stop()) {
		u64 a = i, b = i * 3, c = i + 7, d = ~i, e = i << 5, f = i ^ 0x5a;

		if (rkp_opt_target(a, b, c, d, e, f) != (a ^ b) + (c ^ d) + (e ^ f))
			atomic64_inc(&rkp_opt_bad);
		atomic64_inc(&rkp_opt_calls);
		if (rkp_opt_target2(a, b, c, d, e, f) != (a ^ b) + (c ^ d) - (e ^ f))
			atomic64_inc(&rkp_opt_bad);
		atomic64_inc(&rkp_opt_calls2);
		/*
		 * Sleep now and then: a voluntary context switch is what Tasks
		 * RCU, which the optimizer waits for, counts (a kthread that is
		 * only ever preempted holds every grace period off).
		 */
		if ((++i & 1023) == 0)
			usleep_range(20, 50);
	}
	return 0;
}

int rkp_opt_load_start(void)
{
	unsigned int cpu, n = 0;

	atomic64_set(&rkp_opt_calls, 0);
	atomic64_set(&rkp_opt_calls2, 0);
	atomic64_set(&rkp_opt_bad, 0);
	for_each_online_cpu(cpu) {
		struct task_struct *t;

		if (n == RKP_OPT_MAX_THREADS)
			break;
		t = kthread_create_on_cpu(rkp_opt_loadfn, (void *)(unsigned long)(cpu << 20),
					  cpu, "rkp_opt/%u");
		if (IS_ERR(t))
			break;
		rkp_opt_threads[n++] = t;
		wake_up_process(t);
	}
	return n;
}

void rkp_opt_load_stop(u64 *calls, u64 *calls2, u64 *bad)
{
	unsigned int i;

	for (i = 0; i < RKP_OPT_MAX_THREADS; i++) {
		if (rkp_opt_threads[i])
			kthread_stop(rkp_opt_threads[i]);
		rkp_opt_threads[i] = NULL;
	}
	*calls = atomic64_read(&rkp_opt_calls);
	*calls2 = atomic64_read(&rkp_opt_calls2);
	*bad = atomic64_read(&rkp_opt_bad);
}
