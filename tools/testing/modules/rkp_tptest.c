// SPDX-License-Identifier: GPL-2.0
/*
 * A module with a tracepoint of its own, for t events on a module's
 * tracepoint (89-fprobe-events.sh): writing N to the fire parameter calls
 * the tracepoint rkp_tptest_fire with N and N * 2.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/tracepoint.h>

DECLARE_TRACE(rkp_tptest_fire, TP_PROTO(int n, long twice), TP_ARGS(n, twice));
DEFINE_TRACE(rkp_tptest_fire, TP_PROTO(int n, long twice), TP_ARGS(n, twice));

static int rkp_tptest_set(const char *val, const struct kernel_param *kp)
{
	int n, ret = kstrtoint(val, 0, &n);

	if (ret)
		return ret;
	trace_rkp_tptest_fire(n, 2L * n);
	return 0;
}

static const struct kernel_param_ops rkp_tptest_ops = {
	.set = rkp_tptest_set,
};
module_param_cb(fire, &rkp_tptest_ops, NULL, 0200);

MODULE_DESCRIPTION("rkprobes test: a module's tracepoint");
MODULE_LICENSE("GPL");
