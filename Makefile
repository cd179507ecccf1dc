# SPDX-License-Identifier: GPL-2.0
#
# rkprobes: user-facing entry points. Kbuild reads ./Kbuild, not this file.
#
#   make            build the modules (against the cached test kernel by default)
#   make help       every target
#   make install    modules, rkprobe, header, Module.symvers, documentation (PREFIX, DESTDIR)
#   make demo       set everything up, boot the guest, show rkprobes working
#   make check      host tests, clippy, rustfmt, guest tests on both test kernels
#   make check-all  make check plus the reliability stage on the debug kernel
#                   (KASAN, kmemleak, fault injection): the README's test command
#
# KDIR=/lib/modules/$(uname -r)/build builds against a real Rust-enabled kernel.

RKPROBES_CACHE ?= $(HOME)/.cache/rkprobes
export RKPROBES_CACHE
export PATH := $(HOME)/.cargo/bin:$(PATH)

# The Rust toolchain of module builds. A module's Rust must be built by the
# rustc that built the kernel: for the test kernels, Debian's rustc-web
# (which carries the library source; a rustup toolchain earlier in PATH has
# none) and the bindgen-cli tools/setup installs, whatever the environment
# says. For another KDIR, RUSTC, RUSTDOC, RUSTFMT, CLIPPY_DRIVER and BINDGEN
# given on the command line or in the environment are used, the same tools
# otherwise.
rust_tool = $(if $(and $(if $(TEST_KERNEL),,y),$(filter command line environment,$(origin $(1)))),$($(1)),$(2))
KRUST = RUSTC=$(call rust_tool,RUSTC,/usr/bin/rustc) \
	RUSTDOC=$(call rust_tool,RUSTDOC,/usr/bin/rustdoc) \
	RUSTFMT=$(call rust_tool,RUSTFMT,/usr/bin/rustfmt) \
	CLIPPY_DRIVER=$(call rust_tool,CLIPPY_DRIVER,/usr/bin/clippy-driver) \
	BINDGEN=$(call rust_tool,BINDGEN,$(HOME)/.cargo/bin/bindgen)

KSRC := $(RKPROBES_CACHE)/src/linux-source-6.12
export CARGO_TARGET_DIR := $(RKPROBES_CACHE)/cargo-target
export RKPROBES_KSRC := $(KSRC)

ifeq ($(origin KDIR),undefined)
TEST_KERNEL := 1
KDIR = $(shell cat $(RKPROBES_CACHE)/kdir)
endif
# The second test kernel: the same configuration without the kernel's own
# kprobes (tools/kernel/rkprobes-nokprobes.config).
KDIR_NOKPROBES = $(shell cat $(RKPROBES_CACHE)/kdir-nokprobes)
FRAGMENTS_NOKPROBES := tools/kernel/rkprobes-test.config tools/kernel/rkprobes-nokprobes.config
# The debug kernel of the reliability stage: the first configuration with
# KASAN, kmemleak and fault injection (tools/kernel/rkprobes-debug.config),
# built with clang.
KDIR_DEBUG = $(shell cat $(RKPROBES_CACHE)/kdir-debug)
FRAGMENTS_DEBUG := tools/kernel/rkprobes-test.config tools/kernel/rkprobes-debug.config

# The benchmark kernel (`make bench`): the first configuration without lock,
# preemption and atomic-sleep debugging, with Debian's preemption model
# (tools/kernel/rkprobes-bench.config).
KDIR_BENCH = $(shell cat $(RKPROBES_CACHE)/kdir-bench)
FRAGMENTS_BENCH := tools/kernel/rkprobes-test.config tools/kernel/rkprobes-bench.config

# The test and benchmark modules (tools/testing/modules/) are built for the
# test kernels, and with TESTS=y; on a user's kernel, rkprobes and the
# samples alone.
TESTS ?= $(if $(TEST_KERNEL),y)
KTESTS = RKP_TESTS=$(TESTS)

# A kernel built with clang (the debug kernel, or a clang-built distribution
# kernel) needs its modules built with the same toolchain: LLVM=-N for the
# clang major version it names (CONFIG_CLANG_VERSION) when clang-N is
# installed, as Debian installs each LLVM, else the default LLVM=1.
KCLANG_MAJOR = $(shell sed -n 's/^CONFIG_CLANG_VERSION=\([0-9]*\)[0-9]\{4\}$$/\1/p' $(KDIR)/.config 2>/dev/null)
# An LLVM= given on the command line or in the environment is used as it is.
KLLVM = $(if $(filter command line environment,$(origin LLVM)),LLVM=$(LLVM),$(if $(filter y,$(shell sed -n 's/^CONFIG_CC_IS_CLANG=//p' $(KDIR)/.config 2>/dev/null)),LLVM=$(if $(and $(KCLANG_MAJOR),$(shell command -v clang-$(KCLANG_MAJOR))),-$(KCLANG_MAJOR),1)))

# A kCFI kernel: rust/ffi/abi.rs gives the C ABI's structs their C names for
# the type ids (cfi_encoding), a feature the kernel's list of allowed ones
# lacks; it is added to that list, which every crate of the build enables.
KRUST_FEATURES = $(shell sed -n 's/^rust_allowed_features := //p' \
	$(firstword $(wildcard $(KDIR)/source/scripts/Makefile.build $(KDIR)/scripts/Makefile.build)))
comma := ,
KCFI = $(if $(filter y,$(shell sed -n 's/^CONFIG_CFI_CLANG=//p' $(KDIR)/.config 2>/dev/null)),rust_allowed_features=$(KRUST_FEATURES)$(comma)cfi_encoding)

.PHONY: all modules print-kdir print-kbuild-args rkprobe setup kernel demo check host-test clippy fmt fmt-check \
	install modules_install uninstall help \
	guest-test runner-selftest bench profile insn-long clean kernel-nokprobes kernel-debug kernel-bench layers \
	check-all probe-events-long

all: modules

setup:
	@tools/setup

# Records the cached kernel's directory so that later make invocations (and
# tools) find it without rehashing.
kernel: setup
	@tools/kernel/build-kernel > $(RKPROBES_CACHE)/kdir.new && \
		mv $(RKPROBES_CACHE)/kdir.new $(RKPROBES_CACHE)/kdir

kernel-nokprobes: setup
	@tools/kernel/build-kernel $(FRAGMENTS_NOKPROBES) > $(RKPROBES_CACHE)/kdir-nokprobes.new && \
		mv $(RKPROBES_CACHE)/kdir-nokprobes.new $(RKPROBES_CACHE)/kdir-nokprobes

kernel-bench: setup
	@tools/kernel/build-kernel $(FRAGMENTS_BENCH) > $(RKPROBES_CACHE)/kdir-bench.new && \
		mv $(RKPROBES_CACHE)/kdir-bench.new $(RKPROBES_CACHE)/kdir-bench

kernel-debug: setup
	@tools/kernel/build-kernel $(FRAGMENTS_DEBUG) > $(RKPROBES_CACHE)/kdir-debug.new && \
		mv $(RKPROBES_CACHE)/kdir-debug.new $(RKPROBES_CACHE)/kdir-debug

# With the default KDIR, everything that needs a kernel builds the cached test
# kernel first (a no-op when it is already cached).
ifdef TEST_KERNEL
NEED_KERNEL := kernel
NEED_KERNELS := kernel kernel-nokprobes
NEED_KERNELS_ALL := $(NEED_KERNELS) kernel-debug
endif

modules: $(NEED_KERNEL)
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(KRUST) $(KLLVM) $(KCFI) $(KTESTS) modules

# Installation: the modules through the kernel's modules_install (into
# $(INSTALL_MOD_PATH)/lib/modules/<release>/updates, then depmod), the C
# header and Module.symvers that client modules build against, and the
# documentation. DESTDIR stages it all under another root (a package).
PREFIX ?= /usr/local
DESTDIR ?=
VERSION := $(shell sed -n 's/^\#define RKPROBES_VERSION "\(.*\)"/\1/p' include/rkprobes.h)
INCLUDEDIR := $(DESTDIR)$(PREFIX)/include
DATADIR := $(DESTDIR)$(PREFIX)/share/rkprobes
DOCDIR := $(DESTDIR)$(PREFIX)/share/doc/rkprobes

# The rkprobe tool (Documentation/rkprobe-tool.rst): a host program, built
# with cargo from crates.io's crates; no kernel tree needed. Its man page
# and shell completions are made by the built tool from its command line
# (rkprobe --generate man|bash|zsh|fish), where their usual places are.
RKPROBE_BIN = $(CARGO_TARGET_DIR)/release/rkprobe
MAN1DIR := $(DESTDIR)$(PREFIX)/share/man/man1
BASHCOMPDIR := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR := $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISHCOMPDIR := $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
rkprobe:
	cd tools && cargo build --release --locked -p rkprobe

install: modules modules_install rkprobe
	install -d $(INCLUDEDIR) $(DATADIR) $(DOCDIR) $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(RKPROBE_BIN) $(DESTDIR)$(PREFIX)/bin/rkprobe
	install -d $(MAN1DIR) $(BASHCOMPDIR) $(ZSHCOMPDIR) $(FISHCOMPDIR)
	$(RKPROBE_BIN) --generate man > $(MAN1DIR)/rkprobe.1
	$(RKPROBE_BIN) --generate bash > $(BASHCOMPDIR)/rkprobe
	$(RKPROBE_BIN) --generate zsh > $(ZSHCOMPDIR)/_rkprobe
	$(RKPROBE_BIN) --generate fish > $(FISHCOMPDIR)/rkprobe.fish
	chmod 0644 $(MAN1DIR)/rkprobe.1 $(BASHCOMPDIR)/rkprobe $(ZSHCOMPDIR)/_rkprobe \
		$(FISHCOMPDIR)/rkprobe.fish
	install -m 0644 include/rkprobes.h $(INCLUDEDIR)/rkprobes.h
	install -d $(INCLUDEDIR)/rkprobes-compat/linux
	install -m 0644 include/compat/linux/kprobes.h $(INCLUDEDIR)/rkprobes-compat/linux/kprobes.h
	install -m 0644 Module.symvers $(DATADIR)/Module.symvers
	install -d $(DATADIR)/rust/client $(DATADIR)/rust/ffi
	install -m 0644 rust/client/*.rs $(DATADIR)/rust/client/
	install -m 0644 rust/ffi/abi.rs $(DATADIR)/rust/ffi/abi.rs
	install -m 0644 README.md COPYING CHANGELOG.md $(DOCDIR)/
	install -m 0644 Documentation/*.rst $(DOCDIR)/

modules_install: modules
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(KRUST) $(KLLVM) $(KCFI) $(KTESTS) \
		INSTALL_MOD_PATH=$(DESTDIR) INSTALL_MOD_DIR=updates \
		$(if $(DESTDIR),DEPMOD=true) modules_install

# Removes the modules this tree built (modules.order), wherever
# modules_install put them, then what install copied.
uninstall:
	rel=$$($(MAKE) -s -C $(KDIR) kernelrelease) && \
	sed 's|^$(CURDIR)/||; s|\.o$$|.ko|' modules.order | \
		while read -r m; do rm -f $(DESTDIR)/lib/modules/$$rel/updates/$$m; done && \
	{ [ -n "$(DESTDIR)" ] || depmod $$rel; }
	rm -f $(INCLUDEDIR)/rkprobes.h $(DATADIR)/Module.symvers $(DESTDIR)$(PREFIX)/bin/rkprobe
	rm -f $(MAN1DIR)/rkprobe.1 $(BASHCOMPDIR)/rkprobe $(ZSHCOMPDIR)/_rkprobe \
		$(FISHCOMPDIR)/rkprobe.fish
	rm -rf $(DATADIR)/rust
	rm -rf $(INCLUDEDIR)/rkprobes-compat
	rm -rf $(DOCDIR)
	-rmdir $(DATADIR) 2>/dev/null

# The kernel tree this Makefile builds against, and the arguments its module
# builds pass to the kernel's make (tools/testing/install-check).
print-kdir:
	@echo $(KDIR)

print-kbuild-args:
	@echo $(KRUST) $(KLLVM) $(KCFI)

help:
	@echo 'rkprobes $(VERSION): dynamic kernel probes in Rust (README.md)'
	@echo
	@echo 'Building and installing (KDIR=/lib/modules/$$(uname -r)/build for your kernel):'
	@echo '  make                 build rkprobes.ko and the samples'
	@echo '  make install         modules (modules_install, updates/), bin/rkprobe with its man page'
	@echo '                       and bash, zsh and fish completions, include/rkprobes.h,'
	@echo '                       the compatibility header for modules written for the'
	@echo '                       kernel'"'"'s kprobes (include/rkprobes-compat/linux/kprobes.h),'
	@echo '                       Module.symvers, the Rust client (share/rkprobes/rust/)'
	@echo '                       and the documentation under PREFIX'
	@echo '                       ($(PREFIX)); DESTDIR= stages it for a package'
	@echo '  make rkprobe         build the rkprobe tool (perf probe for rkprobes; no kernel tree)'
	@echo '  make uninstall       remove what install put there'
	@echo '  make clean'
	@echo
	@echo 'Testing (against the cached test kernels unless KDIR is given):'
	@echo '  make check           host tests, clippy, rustfmt, guest tests on both test kernels'
	@echo '  make check-all       make check and the debug kernel (the README test command)'
	@echo '  make demo            boot a guest and show rkprobes working'
	@echo '  make bench           benchmarks beside the kernel'"'"'s kprobes'
	@echo '  make clippy | fmt | fmt-check | layers | host-test | guest-test'

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(KLLVM) RKP_TESTS=y clean

demo: modules
	tools/testing/vm/run --kdir $(KDIR) --quiet-console --script tools/testing/demo.sh

check: $(NEED_KERNELS)
	tools/testing/check --kdir $(KDIR) $(if $(TEST_KERNEL),--kdir-nokprobes $(KDIR_NOKPROBES))

check-all: $(NEED_KERNELS_ALL)
	tools/testing/check --kdir $(KDIR) \
		$(if $(TEST_KERNEL),--kdir-nokprobes $(KDIR_NOKPROBES) --kdir-debug $(KDIR_DEBUG)) --full

# The host parser's long random-input run (10^7 kprobe_events lines).
probe-events-long: setup
	cd tools && RKPROBES_PE_ITERS=10000000 cargo test --release -p rkprobes-host \
		--test probe_events_random no_input_panics -- --nocapture

# The individual stages of `make check`.
host-test: setup $(NEED_KERNEL)
	cd tools && RKPROBES_VMLINUX=$(KDIR)/vmlinux cargo test --release

clippy: $(NEED_KERNEL)
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(KRUST) $(KLLVM) $(KCFI) $(KTESTS) CLIPPY=1 KRUSTFLAGS=-Dwarnings modules
	cd tools && cargo clippy --release --all-targets -- -D warnings

fmt:
	/usr/bin/rustfmt --edition 2021 --config-path $(KSRC)/.rustfmt.toml \
		$$(git ls-files -co --exclude-standard '*.rs')

fmt-check:
	/usr/bin/rustfmt --check --edition 2021 --config-path $(KSRC)/.rustfmt.toml \
		$$(git ls-files -co --exclude-standard '*.rs')

# No raw FFI (kernel::bindings, extern blocks) outside rust/ffi/.
layers:
	tools/testing/layers

guest-test: modules
	tools/testing/vm/run --kdir $(KDIR) --tests tools/testing/guest

runner-selftest: modules
	tools/testing/vm/selftest --kdir $(KDIR)

# The decoder's long differential run against the kernel's C decoder (random
# and mutated encodings) and its benchmark beside the C decoder.
insn-long: setup $(NEED_KERNEL)
	cd tools && RKPROBES_VMLINUX=$(KDIR)/vmlinux RKPROBES_INSN_ITERS=10000000 \
		cargo test --release -p rkprobes-host --test insn_random -- --nocapture
	cd tools && cargo run --release -p rkprobes-host --bin insn-bench -- $(KDIR)/vmlinux 5

# The probe benchmark beside the kernel's kprobes: normal TCG, then with a
# deterministic instruction-counting clock (guest time = instructions). With
# the default KDIR, first on the benchmark kernel (no lock debugging,
# Debian's preemption model: the figures users would see), its modules built
# in a copy of the tree, then on the test kernel as a second table; with a
# KDIR given, on that kernel alone.
# The memory row counts bytes, not time: it runs once, in the normal-TCG run
# (under -icount its 40,000 registrations take most of ten minutes).
BENCH_RUN = tools/testing/vm/run --quiet-console --script tools/testing/bench.sh \
	--timeout 3600 --test-timeout 3000
BENCH_ICOUNT = --icount shift=0 --append rkp_bench_icount
BENCH_TREE = $(RKPROBES_CACHE)/tree-bench-$(shell echo $(CURDIR) | sha1sum | cut -c1-8)
bench: modules $(if $(TEST_KERNEL),kernel-bench)
ifdef TEST_KERNEL
	@echo "bench: the benchmark kernel ($(KDIR_BENCH))"
	tools/testing/copy-tree $(BENCH_TREE)
	$(MAKE) --no-print-directory -C $(BENCH_TREE) KDIR=$(KDIR_BENCH) TESTS=y modules
	$(BENCH_RUN) --kdir $(KDIR_BENCH) --modtree $(BENCH_TREE)
	$(BENCH_RUN) --kdir $(KDIR_BENCH) --modtree $(BENCH_TREE) $(BENCH_ICOUNT)
	@echo "bench: the test kernel, with lock debugging ($(KDIR))"
else
	# rkp_bench and the other test modules, for the kernel given.
	$(MAKE) --no-print-directory TESTS=y modules
endif
	$(BENCH_RUN) --kdir $(KDIR)
	$(BENCH_RUN) --kdir $(KDIR) $(BENCH_ICOUNT)

# The hit paths' instruction profile (tools/testing/insn-profile): per
# function, rkprobes beside the kernel, on the benchmark kernel (or KDIR).
profile: modules $(if $(TEST_KERNEL),kernel-bench)
ifdef TEST_KERNEL
	tools/testing/copy-tree $(BENCH_TREE)
	$(MAKE) --no-print-directory -C $(BENCH_TREE) KDIR=$(KDIR_BENCH) TESTS=y modules
	tools/testing/insn-profile --kdir $(KDIR_BENCH) --modtree $(BENCH_TREE)
else
	tools/testing/insn-profile --kdir $(KDIR)
endif
