#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Typed (BTF) fetchargs, rkprobes' control file against the kernel's
kprobe_events in the same guest (88-btf-args.sh runs this in the host's
root, with the guest's /sys, /proc and /tmp bound in).

With a third argument `dyn`, the same for `f` (fprobe) and `t`
(tracepoint) events on both sides' dynamic_events: each definition above
as an `f` entry (`p`) or exit (`r`, as `FUNC%return`), and `t`
definitions on tracepoints drawn from those whose stub function
(`__probestub_TP`, what a `t` event probes) BTF describes, typed by it.

Definitions are generated from the running kernel's BTF, read here with a
reader of its own (not rkprobes'): functions drawn at random from those
both files accept a plain probe on, then per function its parameters by
name, `$arg*`, `$argN` with and without types, member chains through
`->` and `.` up to three dereferences, strings from `char *` and `char []`,
bitfields, return probes with `$retval` and entry arguments, and broken
forms (no such name or member, `.` on a pointer, `->` on a scalar, a
string of a non-char, `$arg0`, a probe inside the function). Each is
written to the kernel's file and then to rkprobes' (never both at once:
rkprobes refuses a function where a kernel kprobe sits), and compared:
the errno, error_log's entry (message, command and caret), the listing
line and the event's format file.

Then the recorded values: definitions on functions a fixed workload calls
(open, read, write and close of known files) are enabled on the kernel's
side, then on rkprobes', then on the kernel's again; the records of the
workload's tasks are compared, for every field whose value the two runs of
the kernel agree on and that is no address (pointers and counters that
change between runs are left out, and counted). Where a read faults, the
kernel's field keeps the bytes its place held (rkprobes' is 0): before each
run the trace buffer is filled with random text and emptied, and the
kernel's second run defines the events in the other order, so that such a
field differs between the kernel's runs and is left out too. A value
mismatch counts only if a second set of the three runs, of the definitions
that had one, shows it again (memory nobody initialised holds what the
allocator left, which two runs of the kernel may share by chance); the
others are printed as UNCONFIRMED.

Output: one line per mismatch ("MISMATCH ..."), a "SUMMARY key=value ..."
line for the shell test, and the random seed."""

import os
import random
import re
import struct
import subprocess
import sys

T = "/sys/kernel/tracing"
RK = "/sys/kernel/debug/rkprobes"
KGRP, RGRP = "btfk", "btfr"

# --- BTF, read independently of rkprobes' reader ---------------------------

INT, PTR, ARRAY, STRUCT, UNION, ENUM, FWD, TYPEDEF, VOLATILE, CONST, \
    RESTRICT, FUNC, FUNC_PROTO, VAR, DATASEC, FLOAT, DECL_TAG, TYPE_TAG, \
    ENUM64 = range(1, 20)
MODIFIERS = (TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG)


class Btf:
    def __init__(self, data):
        magic, ver, _flags, hlen, toff, tlen, soff, slen = struct.unpack_from("<HBBIIIII", data)
        assert magic == 0xEB9F and ver == 1
        self.strs = data[hlen + soff:hlen + soff + slen]
        types = data[hlen + toff:hlen + toff + tlen]
        self.t = [None]  # id 0: void
        at = 0
        while at < len(types):
            name_off, info, size_type = struct.unpack_from("<III", types, at)
            kind, vlen, kflag = (info >> 24) & 0x1F, info & 0xFFFF, info >> 31
            at += 12
            extra = None
            if kind == INT:
                (extra,) = struct.unpack_from("<I", types, at)
                at += 4
            elif kind == ARRAY:
                extra = struct.unpack_from("<III", types, at)
                at += 12
            elif kind in (STRUCT, UNION):
                extra = [struct.unpack_from("<III", types, at + 12 * i) for i in range(vlen)]
                at += 12 * vlen
            elif kind == ENUM:
                at += 8 * vlen
            elif kind == ENUM64:
                at += 12 * vlen
            elif kind == FUNC_PROTO:
                extra = [struct.unpack_from("<II", types, at + 8 * i) for i in range(vlen)]
                at += 8 * vlen
            elif kind == VAR or kind == DECL_TAG:
                at += 4
            elif kind == DATASEC:
                at += 12 * vlen
            self.t.append((kind, self.name(name_off), size_type, kflag, vlen, extra))
        self.funcs = {}
        for tid, t in enumerate(self.t):
            if t and t[0] == FUNC and t[1] not in self.funcs:
                self.funcs[t[1]] = t[2]

    def name(self, off):
        end = self.strs.index(b"\0", off)
        return self.strs[off:end].decode("latin-1")

    def resolve(self, tid):
        for _ in range(32):
            t = self.t[tid] if tid < len(self.t) else None
            if t is None or t[0] not in MODIFIERS:
                return tid, t
            tid = t[2]
        return tid, None

    def is_char(self, tid):
        _, t = self.resolve(tid)
        return t is not None and t[0] == INT and (t[5] >> 24) & 1 == 0 and t[5] & 0xFF == 8

    def members(self, tid):
        """(name, type id, is bitfield) of a struct or union, those of its
        anonymous members included."""
        _, t = self.resolve(tid)
        out = []
        if t is None or t[0] not in (STRUCT, UNION):
            return out
        for name_off, mtype, off in t[5]:
            bitfield = t[3] and (off >> 24) != 0
            if name_off == 0:
                out += self.members(mtype)
            else:
                out.append((self.name(name_off), mtype, bitfield))
        return out

    def shape(self, tid):
        """What a value of the type is, for choosing what follows it."""
        _, t = self.resolve(tid)
        if t is None:
            return "void"
        kind = t[0]
        if kind == PTR:
            _, p = self.resolve(t[2])
            if p is not None and p[0] in (STRUCT, UNION):
                return "sptr"
            if self.is_char(t[2]):
                return "cptr"
            return "ptr"
        if kind == ARRAY:
            return "carray" if self.is_char(t[5][0]) else "array"
        if kind in (STRUCT, UNION):
            return "struct"
        if kind in (INT, ENUM, ENUM64):
            return "scalar"
        return "other"

    def string_quirk(self, tid):
        """Whether the kernel takes `:string` on a value of this
        non-pointer type: its check for `char *` reads the type's size
        (`btf_type->size`, a union with `->type`) as the pointee's type
        id, and accepts when that id is an 8-bit unsigned integer."""
        _, t = self.resolve(tid)
        return t is not None and t[0] not in (PTR, ARRAY) and self.is_char(t[2])

    def pointee(self, tid):
        _, t = self.resolve(tid)
        return t[2]

    def proto(self, func):
        ftid = self.funcs.get(func)
        if ftid is None:
            return None
        p = self.t[ftid]
        if p is None or p[0] != FUNC_PROTO:
            return None
        return p[2], [(self.name(n), tid) for n, tid in p[5]]


# --- the two control files -------------------------------------------------

def write(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, text.encode("latin-1"))
        return 0
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)


def clear_log(path):
    with open(path, "w"):
        pass


def last_error(path):
    text = open(path, encoding="latin-1").read()
    text = re.sub(r"^\[[ 0-9.]+\] ", "", text, flags=re.M)
    lines = text.rstrip("\n").split("\n")
    return "\n".join(lines[-3:]) if len(lines) >= 3 else ""


SIDES = {
    "k": dict(ke=T + "/kprobe_events", log=T + "/error_log", grp=KGRP),
    "r": dict(ke=RK + "/kprobe_events", log=RK + "/error_log", grp=RGRP),
}


def dynamic():
    """Both sides' dynamic_events, for `f` and `t` definitions."""
    SIDES["k"]["ke"] = T + "/dynamic_events"
    SIDES["r"]["ke"] = RK + "/dynamic_events"


def as_dyn(kind, rest):
    """A `p`/`r` definition as the `f` event of the same function."""
    if kind == "p":
        return "f", rest
    func, _, args = rest.partition(" ")
    return "f", func + "%return " + args


def generate_t(btf, tp, rng):
    """`t` definitions on the tracepoint `tp`, typed from its stub."""
    ret_tid, params = btf.proto("__probestub_" + tp)
    params = params[1:]
    names = [n for n, _ in params if n]
    defs = [("t", tp + " $arg*"), ("t", tp)]
    if names:
        defs.append(("t", tp + " " + " ".join(names[:4])))
    n = rng.randint(1, len(params) + 1)
    defs.append(("t", "%s $arg%d" % (tp, n)))
    ends = []
    for pname, ptid in params[:3]:
        if pname:
            ends.extend(chains(btf, pname, ptid, rng))
    rng.shuffle(ends)
    for text, shape, tid in ends[:4]:
        if shape in ("cptr", "carray"):
            defs.append(("t", "%s s=%s:string" % (tp, text)))
        else:
            defs.append(("t", "%s %s" % (tp, text)))
    defs.append(("t", "%s no_such_param" % tp))
    defs.append(("t", "%s $retval" % tp))
    defs.append(("t", "%s%%return" % tp))
    return defs


def listing(side, ev):
    s = SIDES[side]
    for line in open(s["ke"], encoding="latin-1"):
        if re.match(r"^[prft][0-9]*:%s/%s " % (s["grp"], ev), line):
            return line.rstrip("\n").replace(s["grp"] + "/", "GRP/")
    return None


def fmt(side, ev):
    try:
        text = open("%s/events/%s/%s/format" % (T, SIDES[side]["grp"], ev), encoding="latin-1").read()
    except OSError:
        return None
    return "\n".join(l for l in text.split("\n") if not l.startswith(("name:", "ID:")))


def try_def(side, ev, kind, rest):
    """Writes `KIND:GRP/EV REST` to one side: (errno, error, listing, format)."""
    s = SIDES[side]
    clear_log(s["log"])
    err = write(s["ke"], "%s:%s/%s %s\n" % (kind, s["grp"], ev, rest))
    log = last_error(s["log"]).replace(s["grp"] + "/", "GRP/") if err else ""
    lst = listing(side, ev) if not err else None
    f = fmt(side, ev) if not err else None
    if not err:
        write(s["ke"], "-:%s/%s\n" % (s["grp"], ev))
    return err, log, lst, f


def caret(log):
    lines = log.split("\n")
    return lines[2].index("^") if len(lines) == 3 and "^" in lines[2] else -1


# --- generation ------------------------------------------------------------

def chains(btf, name, tid, rng, depth=0):
    """Member chains from a parameter: (text, shape of its end, its type)."""
    shape = btf.shape(tid)
    yield name, shape, tid
    if depth >= 3 or shape != "sptr":
        return
    members = btf.members(btf.pointee(tid))
    if not members:
        return
    for m, mtid, _bf in rng.sample(members, min(2, len(members))):
        text = "%s->%s" % (name, m)
        mshape = btf.shape(mtid)
        if mshape == "struct":
            inner = btf.members(mtid)
            if inner:
                m2, m2tid, _ = rng.choice(inner)
                text += "." + m2
                mtid, mshape = m2tid, btf.shape(m2tid)
        yield text, mshape, mtid
        if mshape == "sptr" and depth < 2:
            yield from chains(btf, text, mtid, rng, depth + 1)


def bitfields(btf, name, tid):
    if btf.shape(tid) != "sptr":
        return []
    _, t = btf.resolve(btf.pointee(tid))
    out = []
    for m, mtid, bf in btf.members(btf.pointee(tid)):
        if bf and btf.shape(mtid) == "scalar":
            out.append("%s->%s" % (name, m))
    return out


def generate(btf, func, rng):
    ret_tid, params = btf.proto(func)
    names = [n for n, _ in params if n]
    defs = []
    if not names:
        return defs
    defs.append(("p", func + " " + " ".join(names[:4])))
    defs.append(("p", func + " $arg*"))
    n = rng.randint(1, len(params) + 1)
    defs.append(("p", "%s $arg%d $arg1:x32" % (func, n)))
    defs.append(("p", "%s $arg0" % func))
    ends = []
    for pname, ptid in params[:3]:
        if not pname:
            continue
        for text, shape, tid in chains(btf, pname, ptid, rng):
            ends.append((text, shape, tid))
    rng.shuffle(ends)
    for text, shape, tid in ends[:5]:
        if shape in ("cptr", "carray"):
            defs.append(("p", "%s s=%s:string" % (func, text)))
        elif shape == "scalar" and rng.random() < 0.3:
            defs.append(("p", "%s %s:string" % (func, text)))
            QUIRK_STRING[(func, text)] = btf.string_quirk(tid)
        else:
            defs.append(("p", "%s %s" % (func, text)))
    for pname, ptid in params[:2]:
        for bf in bitfields(btf, pname, ptid)[:1]:
            defs.append(("p", "%s %s" % (func, bf)))
    p0, t0 = params[0]
    if p0:
        defs.append(("p", "%s %s->no_such_member" % (func, p0)))
        defs.append(("p", "%s %s.x" % (func, p0)))
        defs.append(("p", "%s+4 %s" % (func, p0)))
        if btf.shape(t0) == "scalar":
            defs.append(("p", "%s %s->x" % (func, p0)))
    defs.append(("p", "%s no_such_param" % func))
    defs.append(("r", "%s $retval" % func))
    defs.append(("r", "%s $retval %s" % (func, names[0])))
    if btf.shape(ret_tid) == "sptr":
        m = btf.members(btf.pointee(ret_tid))
        if m:
            defs.append(("r", "%s $retval->%s" % (func, rng.choice(m)[0])))
    return defs


# `:string` definitions on scalars: whether the kernel's quirk accepts them.
QUIRK_STRING = {}

# --- recorded values -------------------------------------------------------

WORK_FUNCS = ["vfs_read", "vfs_write", "ksys_read", "ksys_write", "do_sys_openat2",
              "do_filp_open", "filp_close", "vfs_open", "security_file_open",
              "do_dentry_open", "getname_flags", "fd_install", "file_close_fd",
              "may_open", "rw_verify_area", "fsnotify_open_perm"]

REC = re.compile(r"^\s*(\S.*?)-(\d+)\s+\[\d+\].*? (k|r)(\d+): \((.*?)\)(.*)$")
# The functions of a workload's `t` events: the tracepoints it hits, which
# open, read, write and close files.
WORK_TPS = ["sys_enter", "sys_exit", "sched_process_exec", "sched_process_fork",
            "kmem_cache_alloc", "kfree", "task_newtask"]


# A member that counts references, read through a pointer.
REFCOUNT = re.compile(r"(->|\.)\w*(count|refs|usage)\b")


def workload():
    """A fixed set of system calls; the pids that made them."""
    pids = []
    with open("/tmp/btf-data.txt", "w") as f:
        f.write("0123456789" * 10)
    for argv in (["/bin/cat", "/tmp/btf-data.txt"], ["/tmp/readloop", "3", "5"],
                 ["/bin/cp", "/tmp/btf-data.txt", "/tmp/btf-copy.txt"]):
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
        pids.append(str(p.pid))
        p.wait()
    return pids


def scramble_buffer(rng):
    """Fills the trace buffer's pages with random text, then empties it: a
    field whose read faults keeps what its place in the ring buffer held
    on the kernel's side (rkprobes writes 0), which this makes differ
    between the kernel's two runs, so that such fields count as unstable
    rather than as agreeing or not."""
    # Every page of each CPU's buffer: a little more than its size. The
    # markers' lengths are random too: each marker record holds the
    # address of its writer, whose upper half (0xffffffff) a faulted
    # 4-byte field would show in both kernel runs if the records were the
    # same size in every scramble and so lay at the same places.
    size = int(open(T + "/buffer_size_kb").read().split()[0]) * 1024
    for cpu in range(os.cpu_count() or 1):
        try:
            os.sched_setaffinity(0, {cpu})
        except OSError:
            continue
        fd = os.open(T + "/trace_marker", os.O_WRONLY)
        try:
            written = 0
            while written < size * 5 // 4:
                n = rng.randrange(16, 1000)
                os.write(fd, rng.randbytes(n // 2 + 1).hex()[:n].encode())
                written += n
        finally:
            os.close(fd)
    os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
    with open(T + "/trace", "w"):
        pass


def record_run(side, defs, reverse=False):
    s = SIDES[side]
    placed = []
    order = list(enumerate(defs))
    if reverse:
        order.reverse()
    for i, (kind, rest) in order:
        if write(s["ke"], "%s:%s/%s%d %s\n" % (kind, s["grp"], side, i, rest)) == 0:
            placed.append(i)
    write(T + "/events/%s/enable" % s["grp"], "1")
    pids = workload()
    write(T + "/events/%s/enable" % s["grp"], "0")
    recs = {}
    for line in open(T + "/trace", encoding="latin-1"):
        m = REC.match(line)
        if not m or m.group(2) not in pids or m.group(3) != side:
            continue
        i = int(m.group(4))
        # The task's place in the workload, not its pid.
        who = pids.index(m.group(2))
        recs.setdefault(i, []).append((who, m.group(6).strip()))
    write(s["ke"], "\n".join("-:%s/%s%d" % (s["grp"], side, i) for i in placed) + "\n")
    return set(placed), recs


def fields(values):
    """`name=value` pairs of a record's text (strings keep their spaces)."""
    return re.findall(r'(\w+)=("[^"]*"|\S+)', values)


def compare_values(vdefs, rng, stats):
    """Records `vdefs` on the kernel's side, on rkprobes', and on the
    kernel's again (see the module documentation), and compares the values;
    returns the mismatch lines by definition index. Counts into `stats`."""
    scramble_buffer(rng)
    a_placed, a = record_run("k", vdefs)
    scramble_buffer(rng)
    r_placed, r = record_run("r", vdefs)
    scramble_buffer(rng)
    # The kernel's second run defines the events in the other order: a
    # field whose read faulted keeps bytes of the record before it in the
    # per-CPU buffer the kernel stages records in, which another order
    # makes another record's. And it runs with a trace instance more, whose
    # files take dentries and inodes: the kernel's two runs would otherwise
    # allocate alike, so that memory nobody initialised (a new dentry's
    # d_time) held the same leftovers in both, and other ones in rkprobes'
    # run, whose events take other files.
    shift = T + "/instances/btf_args_shift%d" % rng.randrange(1 << 20)
    try:
        os.mkdir(shift)
    except OSError:
        shift = None
    b_placed, b = record_run("k", vdefs, reverse=True)
    if shift:
        os.rmdir(shift)
    found = {}
    for i in sorted(a_placed & r_placed & b_placed):
        ra, rr, rb = a.get(i, []), r.get(i, []), b.get(i, [])
        if not ra and not rr:
            continue
        stats["value_events"] += 1
        if len(ra) != len(rr) or len(ra) != len(rb):
            if len(ra) == len(rb):
                found.setdefault(i, []).append(
                    "MISMATCH values %s %s: %d records on the kernel's, %d on rkprobes'"
                    % (vdefs[i][0], vdefs[i][1], len(ra), len(rr)))
            continue
        for (wa, va), (wr, vr), (wb, vb) in zip(ra, rr, rb):
            fa, fr, fb = fields(va), fields(vr), fields(vb)
            for (na, xa), (nr, xr), (nb, xb) in zip(fa, fr, fb):
                if xa != xb or (xa.startswith("0x") and int(xa, 16) >= 0x10000):
                    # Values that change between runs, and addresses (the
                    # hex of pointers, which two runs may share or not).
                    stats["values_unstable"] += 1
                    continue
                if "(fault)" in (xa, xr) and xa != xr:
                    # A user string whose page the task had not mapped
                    # yet: a nofault read fails on either side by chance.
                    stats["values_unstable"] += 1
                    continue
                if (na, xa) != (nr, xr) and REFCOUNT.search(vdefs[i][1]):
                    # A reference count (file->f_count): other tasks
                    # change it, e.g. Popen's parent closing its copy of
                    # the child's /dev/null before or after the child
                    # writes to it.
                    stats["values_unstable"] += 1
                    continue
                stats["values_compared"] += 1
                if (na, xa) == (nr, xr) and wa == wr:
                    stats["values_agreed"] += 1
                else:
                    found.setdefault(i, []).append(
                        "MISMATCH values %s %s: kernel %s=%s rkprobes %s=%s"
                        % (vdefs[i][0], vdefs[i][1], na, xa, nr, xr))
    return found


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else random.randrange(1 << 30)
    want = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    dyn = len(sys.argv) > 3 and sys.argv[3] == "dyn"
    if dyn:
        dynamic()
    print("seed %d%s" % (seed, " dyn" if dyn else ""))
    rng = random.Random(seed)
    btf = Btf(open("/sys/kernel/btf/vmlinux", "rb").read())
    traceable = set()
    for line in open(T + "/available_filter_functions"):
        name = line.split()[0]
        if "." not in name:
            traceable.add(name)
    count = {}
    for line in open("/proc/kallsyms"):
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT":
            count[parts[2]] = count.get(parts[2], 0) + 1
    cands = sorted(f for f in btf.funcs if f in traceable and count.get(f) == 1
                   and btf.proto(f) and btf.proto(f)[1] and not f.startswith("__x64_sys"))
    rng.shuffle(cands)
    if dyn:
        # A third of the functions are tracepoints' stubs, whose `t`
        # definitions come with their `f` ones.
        stubs = [f for f in cands if f.startswith("__probestub_")]
        rest = [f for f in cands if not f.startswith("__probestub_")]
        cands = []
        while stubs or rest:
            for lst, k in ((stubs, 1), (rest, 2)):
                cands.extend(lst[:k])
                del lst[:k]
    stats = dict(tried=0, agreed=0, accepted=0, refused=0, skipped_funcs=0,
                 caret_after_chain=0, string_of_scalar=0, values_compared=0, values_agreed=0,
                 values_unstable=0, value_events=0)
    mism = 0
    ev = 0
    for func in WORK_FUNCS + cands:
        if stats["tried"] >= want and func not in WORK_FUNCS:
            break
        if func not in btf.funcs or btf.proto(func) is None:
            continue
        # A function both files take a plain probe on.
        pk = "f" if dyn else "p"
        if try_def("k", "plain", pk, func)[0] or try_def("r", "plain", pk, func)[0]:
            stats["skipped_funcs"] += 1
            continue
        gen = generate(btf, func, rng)
        if dyn:
            gen = [as_dyn(k, r) for k, r in gen]
            if func.startswith("__probestub_"):
                gen += generate_t(btf, func[len("__probestub_"):], rng)
        for kind, rest in gen:
            ev += 1
            name = "e%d" % ev
            k = try_def("k", name, kind, rest)
            r = try_def("r", name, kind, rest)
            stats["tried"] += 1
            stats["refused" if k[0] else "accepted"] += 1
            same = k == r
            if not same and k[0] == r[0] and k[2:] == r[2:] and k[1] and r[1]:
                # After a member chain the kernel's caret is where an
                # offset made from a NULL pointer puts it (see
                # Documentation/kprobe-events.rst): message and command
                # are compared alone.
                kl, rl = k[1].split("\n"), r[1].split("\n")
                if kl[:2] == rl[:2] and "->" in rest and caret(k[1]) != caret(r[1]):
                    stats["caret_after_chain"] += 1
                    same = True
            m = re.match(r"(\S+) (\S+):string$", rest)
            if (not same and m and QUIRK_STRING.get((m.group(1), m.group(2))) and not k[0]
                    and r[0] == 22 and "This type does not fit for string." in r[1]):
                # A deliberate difference (Documentation/kprobe-events.rst):
                # rkprobes refuses a string of a scalar.
                stats["string_of_scalar"] += 1
                same = True
            if same:
                stats["agreed"] += 1
            else:
                mism += 1
                print("MISMATCH %s %s" % (kind, rest))
                for label, side in (("kernel", k), ("rkprobes", r)):
                    print("  %s: errno %d" % (label, side[0]))
                    for part in side[1:]:
                        if part:
                            print("    " + str(part).replace("\n", "\n    "))

    # Values: the accepted definitions on the workload's functions.
    vdefs = []
    for func in WORK_FUNCS:
        if func not in btf.funcs or btf.proto(func) is None:
            continue
        for kind, rest in generate(btf, func, random.Random(seed + len(vdefs))):
            if "no_such" in rest or ".x" in rest or "+4" in rest or "$arg0" in rest:
                continue
            vdefs.append(as_dyn(kind, rest) if dyn else (kind, rest))
    if dyn:
        for tp in WORK_TPS:
            if btf.proto("__probestub_" + tp) is None:
                continue
            for kind, rest in generate_t(btf, tp, random.Random(seed + len(vdefs))):
                if "no_such" in rest or "$retval" in rest or "%return" in rest:
                    continue
                vdefs.append((kind, rest))
    workload()  # the page cache as warm for the first run as for the others
    found = compare_values(vdefs, rng, stats)
    # A mismatch must show again in a second set of runs of the definitions
    # that had one: a field of memory nobody initialised (a new dentry's
    # d_time) holds what the allocator left there, which the kernel's two
    # runs can share by chance and rkprobes' run not; a wrong read differs
    # again.
    if found:
        again = compare_values([vdefs[i] for i in sorted(found)], rng, dict(stats))
        for i in sorted(found):
            j = sorted(found).index(i)
            if j in again:
                for line in found[i]:
                    mism += 1
                    print(line)
            else:
                stats["values_unconfirmed"] = stats.get("values_unconfirmed", 0) + len(found[i])
                for line in found[i]:
                    print("UNCONFIRMED " + line)
    stats["mismatches"] = mism
    print("SUMMARY " + " ".join("%s=%d" % kv for kv in sorted(stats.items())))


if __name__ == "__main__":
    main()
