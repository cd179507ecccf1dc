// SPDX-License-Identifier: GPL-2.0
/*
 * rkp_peek: reads kernel memory for the guest tests, where the test kernels
 * have no /proc/kcore. Write "ADDR LEN" (hex address, 1 to 64 bytes) to
 * /sys/module/rkp_peek/parameters/peek; read the bytes back from it, in hex.
 * The read goes through copy_from_kernel_nofault(): a bad address is
 * -EFAULT, never an oops.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/uaccess.h>

#define RKP_PEEK_MAX 64

static DEFINE_MUTEX(rkp_peek_lock);
static char rkp_peek_hex[2 * RKP_PEEK_MAX + 1];

static int rkp_peek_set(const char *val, const struct kernel_param *kp)
{
	u8 buf[RKP_PEEK_MAX];
	unsigned long addr;
	unsigned int len;

	if (sscanf(val, "%lx %u", &addr, &len) != 2 || !len || len > RKP_PEEK_MAX)
		return -EINVAL;
	if (copy_from_kernel_nofault(buf, (void *)addr, len))
		return -EFAULT;
	mutex_lock(&rkp_peek_lock);
	bin2hex(rkp_peek_hex, buf, len);
	rkp_peek_hex[2 * len] = '\0';
	mutex_unlock(&rkp_peek_lock);
	return 0;
}

static int rkp_peek_get(char *buffer, const struct kernel_param *kp)
{
	int n;

	mutex_lock(&rkp_peek_lock);
	n = sysfs_emit(buffer, "%s\n", rkp_peek_hex);
	mutex_unlock(&rkp_peek_lock);
	return n;
}

static const struct kernel_param_ops rkp_peek_ops = {
	.set = rkp_peek_set,
	.get = rkp_peek_get,
};
module_param_cb(peek, &rkp_peek_ops, NULL, 0600);
MODULE_PARM_DESC(peek, "write \"ADDR LEN\", read the bytes in hex");

MODULE_DESCRIPTION("rkprobes tests: read kernel memory");
MODULE_LICENSE("GPL");
