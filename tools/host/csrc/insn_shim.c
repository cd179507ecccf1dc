// SPDX-License-Identifier: GPL-2.0
/*
 * Shim between the kernel's x86 instruction decoder (tools/arch/x86/lib/insn.c
 * and inat.c of the kernel source, built by build.rs) and the Rust
 * differential tests: decodes one instruction in 64-bit mode and flattens
 * every field of struct insn into an int array, and exposes the inat table
 * look-ups so that the Rust tables can be compared entry by entry.
 */
#include <asm/insn.h>
#include <asm/inat.h>

/* Layout of the output array; mirrored in tests/common/oracle.rs. */
enum {
	RK_RET = 0,
	RK_FIELDS = 1,		/* 9 fields x (value, nbytes, got) */
	RK_ATTR = 28,
	RK_OPND_BYTES,
	RK_ADDR_BYTES,
	RK_LENGTH,
	RK_EMULATE_PREFIX_SIZE,
	RK_X86_64,
	RK_OUT_LEN,
};

static void put_field(int *out, int idx, const struct insn_field *f)
{
	out[RK_FIELDS + 3 * idx] = f->value;
	out[RK_FIELDS + 3 * idx + 1] = f->nbytes;
	out[RK_FIELDS + 3 * idx + 2] = f->got;
}

int rk_insn_out_len(void)
{
	return RK_OUT_LEN;
}

void rk_insn_decode64(const unsigned char *buf, int len, int *out)
{
	struct insn insn;

	out[RK_RET] = insn_decode(&insn, buf, len, INSN_MODE_64);
	put_field(out, 0, &insn.prefixes);
	put_field(out, 1, &insn.rex_prefix);
	put_field(out, 2, &insn.vex_prefix);
	put_field(out, 3, &insn.opcode);
	put_field(out, 4, &insn.modrm);
	put_field(out, 5, &insn.sib);
	put_field(out, 6, &insn.displacement);
	put_field(out, 7, &insn.immediate1);
	put_field(out, 8, &insn.immediate2);
	out[RK_ATTR] = (int)insn.attr;
	out[RK_OPND_BYTES] = insn.opnd_bytes;
	out[RK_ADDR_BYTES] = insn.addr_bytes;
	out[RK_LENGTH] = insn.length;
	out[RK_EMULATE_PREFIX_SIZE] = insn.emulate_prefix_size;
	out[RK_X86_64] = insn.x86_64;
}

/* Only the return value and length: what the benchmark times. */
int rk_insn_length64(const unsigned char *buf, int len)
{
	struct insn insn;
	int ret = insn_decode(&insn, buf, len, INSN_MODE_64);

	return ret < 0 ? ret : insn.length;
}

unsigned int rk_inat_opcode(unsigned char op)
{
	return inat_get_opcode_attribute(op);
}

unsigned int rk_inat_escape(unsigned char op, int lpfx_id, unsigned int esc_attr)
{
	return inat_get_escape_attribute(op, lpfx_id, esc_attr);
}

unsigned int rk_inat_group(unsigned char modrm, int lpfx_id, unsigned int grp_attr)
{
	return inat_get_group_attribute(modrm, lpfx_id, grp_attr);
}

unsigned int rk_inat_avx(unsigned char op, unsigned char m, unsigned char p)
{
	return inat_get_avx_attribute(op, m, p);
}
