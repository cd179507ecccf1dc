/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The part of KUnit's API that the kernel's lib/test_kprobes.c uses, for
 * building it unchanged on the test kernels, which have no KUnit: this
 * <kunit/test.h> comes before the kernel's (tools/testing/modules/Kbuild)
 * and has its include guard. kunit_test_suites() becomes the module's init: each case
 * runs after the suite's init, and the results go to the kernel log as
 * KTAP, "MODULE: ok N CASE", a failed expectation as a "#" line, then
 * "1..N"; the module fails to load if any case failed
 * (tools/testing/vm/guest-lib.sh's ktap_module reads them).
 *
 * An expectation may be checked in a probe handler (int3 or NMI-like
 * context): it only counts and prints.
 */
#ifndef _KUNIT_TEST_H
#define _KUNIT_TEST_H

#include <linux/atomic.h>
#include <linux/init.h>
#include <linux/module.h>
#include <linux/printk.h>

struct kunit {
	const char *name;
	atomic_t failed;
};

struct kunit_case {
	void (*run_case)(struct kunit *test);
	const char *name;
};

struct kunit_suite {
	const char *name;
	int (*init)(struct kunit *test);
	void (*exit)(struct kunit *test);
	struct kunit_case *test_cases;
};

#define KUNIT_CASE(fn) { .run_case = fn, .name = #fn }

static inline bool kunit_runner_check(struct kunit *test, bool ok, const char *file,
				      int line, const char *what, long long left,
				      long long right)
{
	if (!ok) {
		if (test)
			atomic_inc(&test->failed);
		pr_info(KBUILD_MODNAME ": # %s: EXPECTATION FAILED at %s:%d: %s (%lld, %lld)\n",
			test ? test->name : "?", file, line, what, left, right);
	}
	return ok;
}

/* Each side evaluated once, as KUnit's (a side may register a probe). */
#define KUNIT_RUNNER_CMP(test, l, op, r) ({					\
	typeof(l) __kr_l = (l);							\
	typeof(r) __kr_r = (r);							\
	kunit_runner_check(test, __kr_l op __kr_r, __FILE__, __LINE__,		\
			   #l " " #op " " #r, (long long)__kr_l, (long long)__kr_r); \
})

#define KUNIT_EXPECT_EQ(test, l, r)	((void)KUNIT_RUNNER_CMP(test, l, ==, r))
#define KUNIT_EXPECT_NE(test, l, r)	((void)KUNIT_RUNNER_CMP(test, l, !=, r))
#define KUNIT_EXPECT_TRUE(test, c)	((void)KUNIT_RUNNER_CMP(test, !!(c), ==, 1))
#define KUNIT_EXPECT_FALSE(test, c)	((void)KUNIT_RUNNER_CMP(test, !!(c), ==, 0))
/* An assertion ends the case (cases return void). */
#define KUNIT_ASSERT_EQ(test, l, r)	do { if (!KUNIT_RUNNER_CMP(test, l, ==, r)) return; } while (0)
#define KUNIT_ASSERT_NE(test, l, r)	do { if (!KUNIT_RUNNER_CMP(test, l, !=, r)) return; } while (0)

static inline int kunit_runner_run(struct kunit_suite **suites, int n)
{
	int i, done = 0, failed = 0;

	for (i = 0; i < n; i++) {
		struct kunit_case *c;

		pr_info(KBUILD_MODNAME ": # suite %s\n", suites[i]->name);
		for (c = suites[i]->test_cases; c->run_case; c++) {
			struct kunit test = { .name = c->name, .failed = ATOMIC_INIT(0) };
			int init = suites[i]->init ? suites[i]->init(&test) : 0;

			if (!init)
				c->run_case(&test);
			if (suites[i]->exit)
				suites[i]->exit(&test);
			done++;
			if (init || atomic_read(&test.failed)) {
				failed++;
				pr_info(KBUILD_MODNAME ": not ok %d %s\n", done, c->name);
			} else {
				pr_info(KBUILD_MODNAME ": ok %d %s\n", done, c->name);
			}
		}
	}
	pr_info(KBUILD_MODNAME ": 1..%d\n", done);
	return failed ? -EINVAL : 0;
}

#define kunit_test_suites(...)							\
	static struct kunit_suite *kunit_runner_suites[] = { __VA_ARGS__ };	\
	static int __init kunit_runner_init(void)				\
	{									\
		return kunit_runner_run(kunit_runner_suites,			\
					ARRAY_SIZE(kunit_runner_suites));	\
	}									\
	module_init(kunit_runner_init);						\
	static void __exit kunit_runner_exit(void)				\
	{									\
	}									\
	module_exit(kunit_runner_exit)

#endif /* _KUNIT_TEST_H */
