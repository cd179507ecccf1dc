/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Race windows of test builds (rust/kernel_ext/race.c), mirrored in
 * rust/ffi/glue.rs for rust/kernel_ext/race.rs.
 */
#ifndef RKPROBES_KERNEL_EXT_RACE_H
#define RKPROBES_KERNEL_EXT_RACE_H

void rkp_race_window(unsigned int window);

#endif /* RKPROBES_KERNEL_EXT_RACE_H */
