# unionfs: out-of-tree module for Debian 12's 6.1 amd64 kernel, tested in a QEMU guest.
#
#   make            build src/unionfs.ko against linux-headers-$(KVER) (no fault injection)
#   make FAULT_INJECTION=1  ... with the debugfs fault injection (inject, crash_at): a test
#                   facility, never in the module a user installs; check, soak, bench, run,
#                   check-debug and debug-module always build with it
#   make nofault-module  src/ built without it into build/nofault/ (tests/host/15-fault-build.sh)
#   make run        boot the debug guest with the module and a demo union at /mnt/union
#   make check      build, boot, run tests/ in the guest + host-side platform tests
#   make soak       the reliability tests (tests/t/9x) in long mode, >= 30 min (SOAK_SECS=N per file)
#   make deps       install missing Debian packages (silent when all are present)
#   make kernel     guest kernel + modules into build/kernel (apt-get download, never installed)
#   make initramfs  build/initramfs.cpio.gz (busybox + virtio/9p modules)
#   make vmlinux    debug vmlinux from linux-image-$(KVER)-dbg into build/ (+ build/vmlinux link)
#   make gdb-helpers the kernel's lx-* gdb helpers generated from linux-source-6.1 into build/lx/
#   make crash      crash >= 8.0.4 (trixie's, unpacked with its libs) into build/crash/
#   make lint       checkpatch --strict + sparse (C=1) + W=1, with and without FAULT_INJECTION;
#                   fails on any warning
#   make debug-kernel  the project's debug kernel: Debian's linux-source-6.1 with lockdep, KASAN,
#                   kmemleak, fault injection (qemu-debug/debug-kernel; build/debug-kernel/)
#   make debug-module  src/ built against it (build/debug-kernel/unionfs.ko)
#   make check-debug   the guest suite on the debug kernel; any lockdep/KASAN/BUG/WARNING report
#                   or a kmemleak leak of the module fails it (not part of make check: time)
#   make bench      benchmarks in the guest vs native/overlayfs/FUSE unions (bench/run; the tmpfs
#                   half alone took 62 min of TCG time: FSES=tmpfs, BENCH=1,3, PEERS=... for less)
#                   -> build/bench/results.{md,csv} + PNG plots (docs/performance.md)
#   make clean
#   make install [DESTDIR=...] | dkms-src | dist   packaging (see the packaging block below)
#   make check T="WORD..."   only the guest/host test files whose name contains a WORD
#   make pjdfstest PJDFSTEST=/path/to/pjdfstest [PJD_FS=unionfs,overlay,tmpfs] [PJD_TESTS="chmod
#                   rename/00.t"] [PJD_JOBS=2]: pjdfstest (built in that tree if needed, never part of this
#                   one) in one guest boot on unionfs, overlayfs and tmpfs, compared per .t file
#                   (tests/tools/pjdfstest-run.sh; results in build/pjdfstest-results/)
#
# KVER=6.1.0-NN-amd64 pins the kernel ABI; otherwise it is resolved once from the
# linux-image-amd64 meta package and cached in build/kver.

SHELL      := /bin/bash
BUILD      := $(CURDIR)/build

# Fault injection: off unless asked for, always on for the goals that run tests on the module
# (a plain `make modules` then `make check` rebuilds: the flag is in Kbuild's command lines).
FAULT_GOALS := check soak bench run check-debug debug-module pjdfstest
ifneq ($(filter $(FAULT_GOALS),$(MAKECMDGOALS)),)
override FAULT_INJECTION := 1
endif
ifneq ($(FAULT_INJECTION),1)
override FAULT_INJECTION := 0
endif
export PATH := /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$(PATH)

# --- kernel ABI resolution (issue 24: apt-get update before it) --------------------------------
# On a machine with empty apt lists (a fresh container) apt-cache knows no linux-image-amd64:
# update the lists once (as root) and resolve again, instead of stopping even `make deps`.
KVER_QUERY = apt-cache depends linux-image-amd64 2>/dev/null | \
	sed -n 's/.*Depends: linux-image-\(6\.1\.0-[0-9]*-amd64\)$$/\1/p' | head -n1
ifeq ($(strip $(KVER)),)
KVER := $(shell cat $(BUILD)/kver 2>/dev/null)
ifeq ($(strip $(KVER)),)
KVER := $(shell $(KVER_QUERY))
ifeq ($(strip $(KVER)),)
$(info make: linux-image-amd64 unknown to apt-cache: apt-get update first)
KVER := $(shell [ "$$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1; \
	$(KVER_QUERY))
endif
ifeq ($(strip $(KVER)),)
$(error cannot resolve the kernel ABI from linux-image-amd64 (even after apt-get update; not root?); pass KVER=6.1.0-NN-amd64)
endif
endif
endif
# --- end of kernel ABI resolution ---------------------------------------------------------------
$(shell mkdir -p $(BUILD) && [ "$$(cat $(BUILD)/kver 2>/dev/null)" = "$(KVER)" ] || echo $(KVER) > $(BUILD)/kver)
export KVER

KDIR       := /lib/modules/$(KVER)/build
KIMG       := $(BUILD)/kernel/boot/vmlinuz-$(KVER)
KSTAMP     := $(BUILD)/kernel/.stamp-$(KVER)
INITRAMFS  := $(BUILD)/initramfs.cpio.gz
LINTDIR    := $(BUILD)/lint
SRCTAR     := /usr/src/linux-source-6.1.tar.xz

# Host packages. Everything the guest runs comes from this machine's / over 9p.
# Packages only the debug kernel needs (installed by make debug-kernel).
DEBUG_PKGS := linux-source-6.1 libelf-dev libssl-dev bc flex bison xz-utils

PKGS := linux-headers-$(KVER) qemu-system-x86 busybox-static cpio gdb bpftrace trace-cmd \
	kexec-tools makedumpfile dwarves e2fsprogs attr acl python3 sparse linux-source-6.1 \
	kmod util-linux xz-utils gzip perl make gcc bc flex bison fio stress-ng dmsetup \
	python3-drgn xfsprogs rsync

# Packages only `make bench` needs (installed by it, not by deps): the FUSE peers, fio, plots.
BENCH_PKGS := fio fuse3 unionfs-fuse fuse-overlayfs mergerfs gnuplot-nox

# Modules the initramfs loads, in order (pvpanic first so early panics reach QEMU).
INITRD_MODS := pvpanic pvpanic-mmio virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev \
	virtio_pci netfs fscache 9pnet 9pnet_virtio 9p

.PHONY: debug-kernel debug-module check-debug nofault-module pjdfstest module-btf
.PHONY: all modules deps bench-deps bench kernel initramfs run check soak lint clean vmlinux gdb-helpers crash debug-tools
all: modules

modules: $(KDIR)/Makefile $(BUILD)/unionctl $(BUILD)/ufsx
	$(MAKE) -C $(KDIR) M=$(CURDIR)/src FAULT_INJECTION=$(FAULT_INJECTION) modules

# The module a user gets (no fault injection), built in a copy of src/ so that src/unionfs.ko
# (the test build) stays as it is: tests/host/15-fault-build.sh checks it has no fault sites.
NOFAULT := $(BUILD)/nofault
nofault-module: $(KDIR)/Makefile
	@rm -rf $(NOFAULT) && mkdir -p $(NOFAULT) && cp -r src tracepoints $(NOFAULT)/
	@rm -f $(NOFAULT)/src/*.o $(NOFAULT)/src/*.ko $(NOFAULT)/src/.*.cmd $(NOFAULT)/src/*.mod*
	$(MAKE) -s -C $(KDIR) M=$(NOFAULT)/src FAULT_INJECTION=0 modules
	@cp $(NOFAULT)/src/unionfs.ko $(NOFAULT)/unionfs.ko

# unionctl(8): the branch-management tool (runs in the guest from build/)
$(BUILD)/unionctl: src/unionctl/unionctl.c src/uapi/unionfs.h src/redirect.h
	@mkdir -p $(BUILD)
	gcc -O2 -Wall -Wextra -Werror -o $@ src/unionctl/unionctl.c

# ufsx: the fsx-style exerciser of tests/t/90-fsx.sh (runs in the guest from build/)
$(BUILD)/ufsx: tests/tools/ufsx.c
	@mkdir -p $(BUILD)
	gcc -O2 -Wall -Wextra -Werror -o $@ tests/tools/ufsx.c

# `make` alone needs only the headers (and a compiler); run/check install the rest (deps).
$(KDIR)/Makefile:
	@$(MAKE) --no-print-directory deps PKGS="linux-headers-$(KVER) gcc make"

deps:
	@missing=$$(for p in $(PKGS); do \
		[ "$$(dpkg-query -W -f='$${db:Status-Status}' $$p 2>/dev/null)" = installed ] || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "deps: installing" $$missing; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && \
		apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

bench-deps:
	@$(MAKE) --no-print-directory deps PKGS="$(BENCH_PKGS)"

# Benchmarks (never part of check): options as variables, e.g. make bench BENCH=1,2 RUNS=3
# (see the header of bench/run).
bench: deps bench-deps modules kernel initramfs
	@bench/run

kernel: $(KSTAMP)
$(KSTAMP):
	@echo "kernel: fetching linux-image-$(KVER)-unsigned"
	@rm -rf $(BUILD)/kernel $(BUILD)/dl/linux-image-$(KVER)-unsigned_*.deb
	@mkdir -p $(BUILD)/dl $(BUILD)/kernel
	@cd $(BUILD)/dl && apt-get download -qq linux-image-$(KVER)-unsigned 2>&1 | grep -v 'unsandboxed' || true
	dpkg-deb -x $(BUILD)/dl/linux-image-$(KVER)-unsigned_*.deb $(BUILD)/kernel
	depmod -b $(BUILD)/kernel $(KVER)
	@# Uncompressed ELF vmlinux for QEMU's PVH entry: skips the slow in-guest xz
	@# decompression under TCG (~4 s). kexec (kdump) keeps using the bzImage.
	@off=$$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' $(KIMG) | head -n1 | cut -d: -f1); \
	tail -c +$$((off + 1)) $(KIMG) | xz -dc --single-stream > $(BUILD)/kernel/boot/vmlinux-pvh-$(KVER)
	@rm -f $(BUILD)/dl/linux-image-$(KVER)-unsigned_*.deb
	@touch $@

# BTF for the module (/sys/kernel/btf/unionfs: bpftrace kfunc probes and bpftool see its types),
# made as the kernel's Makefile.modfinal would with a vmlinux: pahole, the kernel's own BTF as the
# base, here from the image's ELF that `kernel` unpacks (its .BTF is the running kernel's, byte
# for byte the debug vmlinux's). Added to src/unionfs.ko after each build of it (kbuild skips
# it: the headers package has no vmlinux). A module without BTF still loads.
module-btf: modules $(KSTAMP)
	@if ! readelf -S src/unionfs.ko | grep -q ' \.BTF '; then \
		LLVM_OBJCOPY=objcopy pahole -J --btf_gen_floats -j --lang_exclude=rust \
			--btf_base $(BUILD)/kernel/boot/vmlinux-pvh-$(KVER) src/unionfs.ko && \
		echo "module-btf: src/unionfs.ko has BTF ($$((0x$$(readelf -S -W src/unionfs.ko | \
			awk '$$2 == ".BTF" { print $$6 }'))) bytes)"; fi

initramfs: $(INITRAMFS)
$(INITRAMFS): $(KSTAMP) qemu-debug/initramfs-init
	@rm -rf $(BUILD)/initramfs && mkdir -p $(BUILD)/initramfs/{bin,dev,proc,sys,newroot,lib/modules}
	@cp /bin/busybox $(BUILD)/initramfs/bin/busybox
	@ln -s busybox $(BUILD)/initramfs/bin/sh
	@cp qemu-debug/initramfs-init $(BUILD)/initramfs/init && chmod 755 $(BUILD)/initramfs/init
	@for m in $(INITRD_MODS); do \
		f=$$(find $(BUILD)/kernel/lib/modules/$(KVER)/kernel -name "$$m.ko*" | head -n1); \
		[ -n "$$f" ] || { echo "initramfs: $$m.ko not found" >&2; exit 1; }; \
		case $$f in *.ko) cp $$f $(BUILD)/initramfs/lib/modules/$$m.ko;; \
		*.ko.xz) xz -dc $$f > $(BUILD)/initramfs/lib/modules/$$m.ko;; \
		*.ko.zst) zstd -qdc $$f > $(BUILD)/initramfs/lib/modules/$$m.ko;; \
		*.ko.gz) gzip -dc $$f > $(BUILD)/initramfs/lib/modules/$$m.ko;; esac; \
	done
	@echo "$(INITRD_MODS)" > $(BUILD)/initramfs/lib/modules/order
	@mknod -m 600 $(BUILD)/initramfs/dev/console c 5 1
	@cd $(BUILD)/initramfs && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -9 > $@.tmp
	@mv $@.tmp $@
	@echo "initramfs: $@ ($$(du -k $@ | cut -f1) KiB)"

DKDIR := $(BUILD)/debug-kernel
debug-kernel: deps
	@$(MAKE) --no-print-directory deps PKGS="$(DEBUG_PKGS)"
	@qemu-debug/debug-kernel

# The module against the debug tree, built in a copy of src/ (the objects in src/ are for
# Debian's kernel and must not be mixed with these).
debug-module: modules
	@[ -f $(DKDIR)/root/.stamp ] || { echo "debug-module: run make debug-kernel first" >&2; exit 2; }
	@rm -rf $(DKDIR)/mod && mkdir -p $(DKDIR)/mod && cp -r src tracepoints $(DKDIR)/mod/
	@rm -f $(DKDIR)/mod/src/*.o $(DKDIR)/mod/src/*.ko $(DKDIR)/mod/src/.*.cmd
	$(MAKE) -s -C $(DKDIR)/src M=$(DKDIR)/mod/src FAULT_INJECTION=$(FAULT_INJECTION) modules
	@cp $(DKDIR)/mod/src/unionfs.ko $(DKDIR)/unionfs.ko

check-debug: deps debug-kernel debug-module
	@UNIONFS_KERNEL=debug BOOT_TIMEOUT=$${BOOT_TIMEOUT:-14400} qemu-debug/boot \
		--append 'slub_debug=FZPU' -- tests/run $(T)

run: deps modules kernel initramfs module-btf
	qemu-debug/boot -- qemu-debug/demo-setup

check: deps modules kernel initramfs module-btf
	@tests/check $(T)

soak: deps modules kernel initramfs module-btf
	@UNIONFS_SOAK_SECS=$(or $(SOAK_SECS),400) tests/soak

PJD_FS   ?= unionfs,overlay,tmpfs
PJD_JOBS ?= 2
pjdfstest: deps modules kernel initramfs
	@[ -n "$(PJDFSTEST)" ] && [ -f "$(PJDFSTEST)/pjdfstest.c" ] || { echo "pjdfstest: PJDFSTEST=DIR," \
		"a pjdfstest tree (e.g. git clone https://github.com/pjd/pjdfstest build/pjdfstest)" >&2; exit 2; }
	@[ -x "$(PJDFSTEST)/pjdfstest" ] || { $(MAKE) --no-print-directory deps PKGS="autoconf automake" && \
		cd $(PJDFSTEST) && autoreconf -ifs >/dev/null && ./configure >/dev/null && $(MAKE) -s pjdfstest; }
	@BOOT_TIMEOUT=$${BOOT_TIMEOUT:-14400} qemu-debug/boot -- tests/tools/pjdfstest-run.sh \
		--fs $(PJD_FS) --jobs $(PJD_JOBS) $(abspath $(PJDFSTEST)) $(PJD_TESTS)

# The file's own name ends in "vmlinux" (build/dbg/KVER/vmlinux; build/vmlinux links to it):
# the kernel's lx-symbols reloads the objfile whose real path ends so, and finds none otherwise.
VMLINUX := $(BUILD)/dbg/$(KVER)/vmlinux
vmlinux: $(VMLINUX)
	@ln -sfn dbg/$(KVER)/vmlinux $(BUILD)/vmlinux
	@echo "vmlinux: $(BUILD)/vmlinux -> dbg/$(KVER)/vmlinux"
$(VMLINUX):
	@echo "vmlinux: fetching linux-image-$(KVER)-dbg (~850 MB)"
	@mkdir -p $(BUILD)/dl $(dir $@)
	@cd $(BUILD)/dl && apt-get download -qq linux-image-$(KVER)-dbg 2>&1 | grep -v 'unsandboxed' || true
	dpkg-deb --fsys-tarfile $(BUILD)/dl/linux-image-$(KVER)-dbg_*.deb | \
		tar -x -O ./usr/lib/debug/boot/vmlinux-$(KVER) > $@.tmp
	@mv $@.tmp $@
	@rm -f $(BUILD)/dl/linux-image-$(KVER)-dbg_*.deb

# lx-* helpers: configure the apt kernel source with the image's config + GDB_SCRIPTS and run
# `make scripts_gdb` (~1 min); keep only vmlinux-gdb.py and scripts/gdb (no source tree left).
LXDIR := $(BUILD)/lx
gdb-helpers: $(LXDIR)/vmlinux-gdb.py
$(LXDIR)/vmlinux-gdb.py: | $(KSTAMP)
	@echo "gdb-helpers: generating lx-* helpers from $(SRCTAR)"
	@rm -rf $(LXDIR) $(LXDIR).src && mkdir -p $(LXDIR).src
	tar -xJf $(SRCTAR) -C $(LXDIR).src --strip-components=1
	cp $(BUILD)/kernel/boot/config-$(KVER) $(LXDIR).src/.config
	cd $(LXDIR).src && ./scripts/config -e GDB_SCRIPTS && \
		$(MAKE) -s olddefconfig >/dev/null && $(MAKE) -s scripts_gdb >/dev/null
	mkdir -p $(LXDIR)/scripts
	cp -rL $(LXDIR).src/scripts/gdb $(LXDIR)/scripts/gdb
	cp -L $(LXDIR).src/vmlinux-gdb.py $(LXDIR)/vmlinux-gdb.py
	@rm -rf $(LXDIR).src

# crash >= 8.0.4 without touching the host's packages: apt with a private sources list and
# state dir (suite trixie), dpkg-deb -x of crash + the libraries it needs, run through
# that libc's ld.so (qemu-debug/crash does this).
CRASHDIR  := $(BUILD)/crash
CRASHPKGS := crash libc6 libstdc++6 libgcc-s1 libzstd1 liblzo2-2 libsnappy1v5 libncursesw6 \
	libtinfo6 zlib1g liblzma5
crash: $(CRASHDIR)/.stamp
$(CRASHDIR)/.stamp:
	@echo "crash: fetching trixie's crash + libs into $(CRASHDIR)"
	@rm -rf $(CRASHDIR) && mkdir -p $(CRASHDIR)/apt/lists/partial $(CRASHDIR)/apt/archives/partial \
		$(CRASHDIR)/debs $(CRASHDIR)/root
	@uri=$$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1); \
	[ -n "$$uri" ] || uri=$$(awk '$$1 == "deb" { print $$2; exit }' /etc/apt/sources.list); \
	echo "deb $$uri trixie main" > $(CRASHDIR)/apt/sources.list
	@opts="-o Dir::Etc::SourceList=$(CRASHDIR)/apt/sources.list -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists=$(CRASHDIR)/apt/lists -o Dir::Cache=$(CRASHDIR)/apt \
		-o Dir::State::status=/dev/null -o APT::Architecture=amd64 -o Debug::NoLocking=1"; \
	apt-get $$opts update -qq && \
	cd $(CRASHDIR)/debs && apt-get $$opts download -qq $(CRASHPKGS) 2>&1 | grep -v unsandboxed; true
	@for d in $(CRASHDIR)/debs/*.deb; do dpkg-deb -x $$d $(CRASHDIR)/root; done
	@rm -rf $(CRASHDIR)/apt $(CRASHDIR)/debs
	@$(CRASHDIR)/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 \
		--library-path $(CRASHDIR)/root/usr/lib/x86_64-linux-gnu:$(CRASHDIR)/root/lib/x86_64-linux-gnu \
		$(CRASHDIR)/root/usr/bin/crash --version | grep -m1 "^crash"
	@touch $@

debug-tools: vmlinux gdb-helpers crash

$(LINTDIR)/checkpatch.pl:
	@mkdir -p $(LINTDIR)
	tar -xJf $(SRCTAR) -C $(LINTDIR) --strip-components=2 --wildcards \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' '*/scripts/const_structs.checkpatch'
	@touch $@

lint: deps $(LINTDIR)/checkpatch.pl
	@rc=0; \
	echo "lint: checkpatch --strict"; \
	perl $(LINTDIR)/checkpatch.pl --strict --no-tree --terse --show-types -f \
		$(filter-out %.mod.c,$(wildcard src/*.c src/*.h)) || rc=1; \
	for fi in $$((1 - $(FAULT_INJECTION))) $(FAULT_INJECTION); do \
	echo "lint: sparse (C=1) + W=1, FAULT_INJECTION=$$fi"; \
	$(MAKE) -s -C $(KDIR) M=$(CURDIR)/src clean >/dev/null; \
	out=$$($(MAKE) -C $(KDIR) M=$(CURDIR)/src FAULT_INJECTION=$$fi C=1 W=1 modules 2>&1) || rc=1; \
	echo "$$out" | grep -E 'warning|error' && rc=1; \
	done; \
	[ $$rc = 0 ] && echo "lint: clean" || echo "lint: FAILED"; exit $$rc

# --- packaging (issue 24): version, install, dkms ------------------------------------------------
#   make install [DESTDIR=/root] [KVER=...]  the module (built without touching src/, in
#        build/pkg/) into /lib/modules/$(KVER)/updates/, unionctl into /usr/sbin, unionfs.5 and
#        unionctl.8 into /usr/share/man, the uapi header as /usr/include/linux/unionfs.h;
#        depmod only when DESTDIR is empty. Never loads anything. The mount helper
#        /usr/sbin/mount.unionfs too (mount -t unionfs, fstab, systemd), diverting unionfs-fuse's
#        helper to /usr/sbin/mount.unionfs.fuse when DESTDIR is empty (dpkg-divert).
#        The gdb helpers too: src/unionfs.ko-gdb.py and gdb-scripts/unionfs_gdb/ into gdb's
#        auto-load directory for the module (/usr/share/gdb/auto-load/<real path of the module's
#        dir>/), so gdb has the unionfs-* commands as soon as it loads the installed unionfs.ko's
#        symbols (lx-symbols, add-symbol-file); that directory is in gdb's default safe-path.
#   make uninstall [DESTDIR=...]  removes those files; the diversion is undone
#   make dkms-src [DESTDIR=...]  the DKMS source tree into /usr/src/unionfs-$(VERSION)/
#        (then: dkms build -m unionfs -v $(VERSION) -k KVER; dkms install ...)
#   make dist    build/unionfs-$(VERSION).tar.gz: the same tree as a tarball
# The version is `git describe --always --dirty`, or the VERSION file of a tree without git
# (a dkms tree or a tarball); src/Makefile (Kbuild) passes it to MODULE_VERSION.
VERSION   := $(shell [ -e .git ] && git describe --always --dirty 2>/dev/null || cat VERSION 2>/dev/null || echo unknown)
PKGDIR    := $(BUILD)/pkg
PKGSRC    := $(PKGDIR)/unionfs-$(VERSION)
MODDIR    := /lib/modules/$(KVER)/updates
# gdb looks for OBJFILE-gdb.py under its auto-load dir by the objfile's real path (merged /usr:
# /lib/modules/... is /usr/lib/modules/...)
GDBALDIR  := /usr/share/gdb/auto-load$(shell realpath -m $(MODDIR))
# dkms: used by the host test tests/host/45-install.sh (make check); graphviz: `dot` renders the
# gdb helper's fan-out graph (tests/host/30-gdb.sh); linux-perf: bench/profile (after make bench)
PKGS      += dkms graphviz
BENCH_PKGS += linux-perf
.PHONY: install dkms-src dist pkg-src pkg-module uninstall install-mount-helper uninstall-mount-helper \
	install-gdb uninstall-gdb

# the source tree DKMS and `make install` build from: dkms.conf, VERSION, LICENSE, src/ (sources
# only), tracepoints/
pkg-src:
	@rm -rf $(PKGSRC) && mkdir -p $(PKGSRC)
	@tar -c --exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c' \
		--exclude='.*.cmd' --exclude='.*.d' --exclude=modules.order --exclude=Module.symvers \
		--exclude='*.dwo' --exclude='.tmp_versions' src tracepoints dkms.conf LICENSE | tar -x -C $(PKGSRC)
	@echo "$(VERSION)" > $(PKGSRC)/VERSION

pkg-module: pkg-src $(KDIR)/Makefile
	$(MAKE) -s -C $(KDIR) M=$(PKGSRC)/src FAULT_INJECTION=0 modules

install: pkg-module $(BUILD)/unionctl
	install -D -m 644 $(PKGSRC)/src/unionfs.ko $(DESTDIR)$(MODDIR)/unionfs.ko
	install -D -m 755 $(BUILD)/unionctl $(DESTDIR)/usr/sbin/unionctl
	install -D -m 644 docs/unionfs.5 $(DESTDIR)/usr/share/man/man5/unionfs.5
	install -D -m 644 docs/unionctl.8 $(DESTDIR)/usr/share/man/man8/unionctl.8
	install -D -m 644 src/uapi/unionfs.h $(DESTDIR)/usr/include/linux/unionfs.h
	@if [ -z "$(DESTDIR)" ]; then depmod -a $(KVER); fi
	@$(MAKE) --no-print-directory install-mount-helper install-gdb

# the gdb helpers, auto-loaded with the installed module's symbols (see the block's header)
install-gdb:
	install -D -m 644 src/unionfs.ko-gdb.py $(DESTDIR)$(GDBALDIR)/unionfs.ko-gdb.py
	install -D -m 644 -t $(DESTDIR)$(GDBALDIR)/unionfs_gdb gdb-scripts/unionfs_gdb/*.py
uninstall-gdb:
	rm -f $(DESTDIR)$(GDBALDIR)/unionfs.ko-gdb.py
	rm -rf $(DESTDIR)$(GDBALDIR)/unionfs_gdb

# mount.unionfs (src/mount-helper/): with DESTDIR empty, unionfs-fuse's helper of the same path
# is kept as /usr/sbin/mount.unionfs.fuse with a local dpkg diversion (install.sh; DPKG_ROOT /
# DPKG_ADMINDIR select a scratch root / dpkg database, as for dpkg-divert itself)
install-mount-helper:
	@DESTDIR="$(DESTDIR)" src/mount-helper/install.sh install
uninstall-mount-helper:
	@DESTDIR="$(DESTDIR)" src/mount-helper/install.sh uninstall

uninstall: uninstall-mount-helper uninstall-gdb
	rm -f $(DESTDIR)$(MODDIR)/unionfs.ko $(DESTDIR)/usr/sbin/unionctl \
		$(DESTDIR)/usr/share/man/man5/unionfs.5 $(DESTDIR)/usr/share/man/man8/unionctl.8 \
		$(DESTDIR)/usr/include/linux/unionfs.h
	@if [ -z "$(DESTDIR)" ]; then depmod -a $(KVER); fi

dkms-src: pkg-src
	@rm -rf $(DESTDIR)/usr/src/unionfs-$(VERSION) && mkdir -p $(DESTDIR)/usr/src
	cp -r $(PKGSRC) $(DESTDIR)/usr/src/unionfs-$(VERSION)
	@echo "dkms-src: $(DESTDIR)/usr/src/unionfs-$(VERSION); next: dkms build -m unionfs -v $(VERSION) -k $(KVER)"

dist: pkg-src
	tar -C $(PKGDIR) -czf $(BUILD)/unionfs-$(VERSION).tar.gz unionfs-$(VERSION)
	@echo "dist: $(BUILD)/unionfs-$(VERSION).tar.gz"
# --- end of packaging ----------------------------------------------------------------------------

clean:
	-$(MAKE) -s -C $(KDIR) M=$(CURDIR)/src clean 2>/dev/null
	rm -rf $(BUILD)
