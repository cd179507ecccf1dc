// SPDX-License-Identifier: GPL-2.0
/*
 * insn-profile: a QEMU TCG plugin that counts, per guest address, the
 * kernel instructions executed between two markers, for the hit-path
 * profiles of Documentation/performance.rst.
 *
 * A marker is the 7-byte NOP `nopl ID(%rax)` (0f 1f 80 + a 32-bit ID) with
 * ID = 0x524b0000 | (row << 1) | end: rkp_bench places one before and one
 * after each timed loop (with profile=1), sysloop (-p ROW) around its loop
 * of system calls, in user space. At a start marker the plugin
 * snapshots its counters; at the matching end marker it writes, to the file
 * given as out=FILE, a line "row ROW" followed by one line "ADDR COUNT" for
 * each kernel address executed in between. The host (tools/testing/
 * insn-profile) turns addresses into symbols.
 *
 * Only QEMU's stable plugin API of 7.2 is used, declared below (QEMU's
 * Debian packages ship the plugin loader but not its header).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn,
						enum qemu_plugin_op op, void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb,
				    void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define MARKER_MAGIC 0x524b0000u
#define KERNEL_START 0xffff800000000000ull
#define TABLE_BITS 20
#define TABLE_SIZE (1u << TABLE_BITS)

struct slot {
	uint64_t addr;	/* 0: empty */
	uint64_t count;	/* bumped inline by the translated code */
	uint64_t snap;	/* at the last start marker */
};

static struct slot *table;
static FILE *out;
static bool full_reported;

static struct slot *slot_of(uint64_t addr)
{
	uint64_t h = (addr * 0x9e3779b97f4a7c15ull) >> (64 - TABLE_BITS);

	for (unsigned int i = 0; i < TABLE_SIZE; i++) {
		struct slot *s = &table[(h + i) & (TABLE_SIZE - 1)];

		if (s->addr == addr)
			return s;
		if (!s->addr) {
			s->addr = addr;
			return s;
		}
	}
	if (!full_reported) {
		fprintf(stderr, "insn-profile: address table full\n");
		full_reported = true;
	}
	return NULL;
}

static void marker(unsigned int vcpu, void *udata)
{
	uint32_t id = (uint32_t)(uintptr_t)udata;

	(void)vcpu;
	if (!(id & 1)) {
		for (unsigned int i = 0; i < TABLE_SIZE; i++)
			table[i].snap = table[i].count;
		return;
	}
	fprintf(out, "row %u\n", (id & 0xffff) >> 1);
	for (unsigned int i = 0; i < TABLE_SIZE; i++) {
		struct slot *s = &table[i];

		if (s->addr && s->count != s->snap)
			fprintf(out, "%" PRIx64 " %" PRIu64 "\n", s->addr, s->count - s->snap);
	}
	fflush(out);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t addr = qemu_plugin_insn_vaddr(insn);
		const uint8_t *b = qemu_plugin_insn_data(insn);
		struct slot *s;

		/* Markers anywhere (sysloop's are in user space); counts
		 * only of kernel instructions. */
		if (qemu_plugin_insn_size(insn) == 7 && b[0] == 0x0f && b[1] == 0x1f &&
		    b[2] == 0x80) {
			uint32_t mid;

			memcpy(&mid, b + 3, 4);
			if ((mid & 0xffff0000u) == MARKER_MAGIC)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, marker,
					QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)mid);
		}
		if (addr < KERNEL_START)
			continue;
		s = slot_of(addr);
		if (s)
			qemu_plugin_register_vcpu_insn_exec_inline(insn,
				QEMU_PLUGIN_INLINE_ADD_U64, &s->count, 1);
	}
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	fclose(out);
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	const char *path = NULL;

	(void)info;
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
	if (!path) {
		fprintf(stderr, "insn-profile: out=FILE is required\n");
		return -1;
	}
	table = calloc(TABLE_SIZE, sizeof(*table));
	out = fopen(path, "w");
	if (!table || !out) {
		perror("insn-profile");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
