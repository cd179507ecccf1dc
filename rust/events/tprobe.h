/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of rust/events/tprobe.c, mirrored in rust/ffi/trace_event.rs
 * for rust/events/tprobe.rs.
 */
#ifndef RKPROBES_EVENTS_TPROBE_H
#define RKPROBES_EVENTS_TPROBE_H

struct module;

void *rkp_tp_find(const char *name);
void *rkp_tp_find_in_module(struct module *mod, const char *name);
unsigned long rkp_tp_stub(void *tp);
int rkp_tp_attach(void *tp);
void rkp_tp_detach(void *tp);

#endif /* RKPROBES_EVENTS_TPROBE_H */
