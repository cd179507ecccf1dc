# SPDX-License-Identifier: GPL-2.0
# No leaks: last of the run, with rkprobes and every module the tests loaded
# unloaded, kmemleak scans memory twice and must report no unreferenced
# object that involves rkprobes, its samples or its test modules: one whose
# allocation backtrace has a frame in one of them, or (since they are gone and
# their addresses no longer resolve to names) a frame in module space that
# resolves to no symbol. In this guest only rkprobes' modules and lkdtm, a
# probe target of 48-gone.sh, are ever loaded. Other suspects (the kernel's
# own boot-time allocations that kmemleak cannot see referenced) are printed,
# not judged.

KML=/sys/kernel/debug/kmemleak
if [ ! -e $KML ]; then
	skip "no leaks" "kernel without CONFIG_DEBUG_KMEMLEAK"
	return 0 2>/dev/null || exit 0
fi
check "kmemleak is enabled" sh -c "! dmesg | grep -q 'Kernel memory leak detector disabled'"

# Clients first, rkprobes last; a few rounds for modules that wait on others.
mods='^(rkprobes[a-z_]*|rkp_[a-z_]*|[a-z_]*_example|lkdtm)$'
for round in 1 2 3; do
	for m in $(awk '{ print $1 }' /proc/modules | grep -E "$mods" | grep -v '^rkprobes$'); do
		rmmod "$m" 2>/dev/null
	done
done
grep -q '^rkprobes ' /proc/modules && check "rmmod rkprobes" rmmod rkprobes
expect_eq "rkprobes and its modules unloaded" "" \
	"$(awk '{ print $1 }' /proc/modules | grep -E "$mods" | tr '\n' ' ')"

# kmemleak never reports an object younger than 5 seconds; RCU callbacks
# and deferred work of the unloads run meanwhile.
sleep 6
check "kmemleak scan" sh -c "echo scan > $KML"
# The second scan drops suspects that were only in flight during the first.
check "kmemleak scan again" sh -c "echo scan > $KML"
cat $KML > /tmp/kmemleak.all

# One line per suspect: its report with lines joined by " | ".
awk '/^unreferenced object/ { if (b != "") print b; b = $0; next }
	{ sub(/^ +/, ""); b = b " | " $0 }
	END { if (b != "") print b }' /tmp/kmemleak.all > /tmp/kmemleak.objs
# A frame "[<address>] symbol+off/size [module]" in one of ours, or a
# frame in module space (0xffffffffc0000000 to 0xffffffffff000000 with
# KASLR) that prints as a bare address: code of a module that was unloaded.
grep -E '\[(rkprobes[a-z_]*|rkp_[a-z_]*|[a-z_]*_example|lkdtm)\]|\] 0xffffffff([c-e][0-9a-f]|f[0-e])[0-9a-f]{6}( |$)' \
	/tmp/kmemleak.objs > /tmp/kmemleak.ours
others=$(($(grep -c . /tmp/kmemleak.objs) - $(grep -c . /tmp/kmemleak.ours)))
diag "$others other suspect(s), not rkprobes':"
grep -vxF -f /tmp/kmemleak.ours /tmp/kmemleak.objs | head -n 5 | sed 's/ | /\n#     /g; s/^/#   /'
if [ -s /tmp/kmemleak.ours ]; then
	not_ok "no leak involving rkprobes or its modules ($(grep -c . /tmp/kmemleak.ours) reported)"
	sed 's/ | /\n#     /g; s/^/#   /' /tmp/kmemleak.ours
else
	ok "no leak involving rkprobes or its modules"
fi
