# dot — build, test, demo, install.
#
# Every binary is built static (+crt-static) for the host target, so the plugins the demo and the
# tests run can be confined by dot-sandbox, and every dot-* tool lands in one directory
# (target/$(TARGET)/$(PROFILE)) with dot-sandbox beside dot-launch.

CARGO   ?= cargo
# The oldest Rust that builds dot (Cargo.toml `rust-version`); `toolchain` checks it first.
RUST_MIN := $(shell sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
TARGET  ?= $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
RUSTFLAGS_STATIC := -C target-feature=+crt-static
CARGO_T := RUSTFLAGS='$(RUSTFLAGS_STATIC)' $(CARGO)
# Reproducible release builds: no build-machine path in a binary. The workspace, cargo's registry
# sources and the toolchain are named by fixed prefixes instead (panic locations keep the rest of
# the path), so two clean builds of one commit in different directories are byte-identical
# (tests/tests/reproducible.rs). Only the release build takes them: the debug builds `make test`
# runs keep the flags of a plain `cargo` call, so a quick loop and the suite share one build.
CARGO_HOME_DIR := $(or $(CARGO_HOME),$(HOME)/.cargo)
RUST_SYSROOT   := $(shell rustc --print sysroot 2>/dev/null)
RUSTFLAGS_REPRO := --remap-path-prefix=$(CURDIR)=/build/dot \
	--remap-path-prefix=$(CARGO_HOME_DIR)=/cargo \
	--remap-path-prefix=$(RUST_SYSROOT)=/rustc/sysroot
RUSTFLAGS_RELEASE := $(RUSTFLAGS_STATIC) $(RUSTFLAGS_REPRO)
CARGO_R := RUSTFLAGS='$(RUSTFLAGS_RELEASE)' $(CARGO)

# Install layout (GNU conventions). `make install PREFIX=/usr DESTDIR="$PKGDIR"` for a package.
# PROFILE picks the build that is installed (release: built first by `make build`; the install test
# passes PROFILE=debug and BUILT=<its binaries> so it installs what `make test` already built).
PREFIX  ?= /usr/local
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
BINDIR  ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/libexec
MANDIR  ?= $(PREFIX)/share/man
DOCDIR  ?= $(PREFIX)/share/doc/dot
# Bash completion, one file per tool on PATH (generated from the tools' --help at install).
COMPLETIONSDIR ?= $(PREFIX)/share/bash-completion/completions
DESTDIR ?=
PROFILE ?= release
BUILT   ?= target/$(TARGET)/$(PROFILE)
INSTALL ?= install
OBJCOPY ?= objcopy

# The system registry's layers (docs/registry.md "System layers"), compiled into every tool: the
# vendor layer $(PREFIX)/lib/dot (written only by packages) and the admin layer $(SYSCONFDIR)/dot
# (PREFIX=/usr: /usr/lib/dot and /etc/dot). Fixed at build time, never looked up at run time.
export DOT_VENDOR_DIR := $(PREFIX)/lib/dot
export DOT_ADMIN_DIR  := $(SYSCONFDIR)/dot
# Where dot-sandbox probe --prove finds dot-canary when it is not beside it (an installation keeps
# the canary out of PATH, in $(LIBEXECDIR)/dot; sandbox/src/prove.rs), also fixed at build time.
export DOT_LIBEXEC_DIR := $(LIBEXECDIR)/dot

REL     := target/$(TARGET)/release
DBG     := target/$(TARGET)/debug
TOOLS   := dot-verify dot-register dot-launch dot-sandbox dot-reap dot-discard dot-journal-fmt dot-canary
# Of TOOLS, those installed in $(LIBEXECDIR)/dot instead of BINDIR: programs no one runs by name.
LIBEXEC_TOOLS := dot-canary
BIN_TOOLS := $(filter-out $(LIBEXEC_TOOLS),$(TOOLS))
MAN1    := $(TOOLS:%=man/%.1)
MAN7    := man/dot.7
# The docs keep the source tree's layout under DOCDIR (README.md beside docs/), so the README's
# relative links (docs/errors.md, BENCHMARKS.md) hold where they are installed too.
TOP_DOCS := README.md BENCHMARKS.md
SUB_DOCS := $(wildcard docs/*.md)

DEMO_ROOT := demo/root
DEMO_OUT  := demo/out

.PHONY: all build toolchain rustflags test need-root demo check msrv-deps bench install installable uninstall clean fuzz soak deb

all: build

# One line, before anything is built, when cargo or rustc is missing or older than RUST_MIN
# (README "Toolchain": rustup; Debian's packaged rustc is older).
toolchain:
	@command -v $(CARGO) >/dev/null 2>&1 && command -v rustc >/dev/null 2>&1 || { \
		echo "make: cargo and rustc not found: install Rust $(RUST_MIN) or newer with rustup (https://rustup.rs; Debian's packaged rustc is too old)" >&2; exit 1; }
	@v=$$(rustc --version | cut -d' ' -f2 | cut -d- -f1); \
		[ "$$(printf '%s\n%s\n' '$(RUST_MIN)' "$$v" | sort -V | head -n 1)" = '$(RUST_MIN)' ] || { \
		echo "make: rustc $$v is older than $(RUST_MIN), the oldest that builds dot: rustup update (Debian's packaged rustc is too old)" >&2; exit 1; }

# The layer paths a release build compiles in (below), recorded beside its binaries so that
# `make install` knows whether what was built is what it is asked to install.
LAYERS := $(DOT_VENDOR_DIR) $(DOT_ADMIN_DIR) $(DOT_LIBEXEC_DIR)
LAYERS_STAMP = $(BUILT)/dot-layers

# --locked: exactly the versions in Cargo.lock, as a distribution build must.
build: toolchain
	$(CARGO_R) build --locked --release --target $(TARGET) --workspace --bins
	@echo '$(LAYERS)' > $(REL)/dot-layers

# The flags of the release build, as this checkout's directory makes them (the reproducibility
# test builds with exactly these).
rustflags:
	@echo '$(RUSTFLAGS_RELEASE)'

# Debug binaries (static too) are what the tests run; DOT_STATIC_DIR tells them where. Only these
# builds carry dot-launch's test-only hooks (failpoints, pause point, pretend ABI); release never does.
#
# Every assertion of an error kind records the kind in KINDS_SEEN (testkit::kinds), and the `next`
# it carried; after the suite, the catalogue's ignored tests fail unless every kind of
# docs/errors.md was asserted and every `next` seen is of a kind tests/tests/next_replay.rs ran.
TEST_FEATURES := --features launch/test-hooks
# tests/need.sh first: as root it installs the Debian packages the suites run (minisign, Go, a C
# compiler, mandoc, strace, dpkg, lintian, …); as anyone else it names them and stops. Every error
# kind a test asserted is recorded under KINDS_SEEN; the last step checks none is missing.
KINDS_SEEN := $(CURDIR)/target/kinds-seen
# The suites run as root (namespaces, root-owned layers, chown, apt-get in tests/need.sh): as
# anyone else `make test` stops at once, before building, and says so.
need-root:
	@[ "$$(id -u)" -eq 0 ] || { echo "make test: the test suites run as root (uid $$(id -u) here): run sudo make test" >&2; exit 1; }

test: need-root toolchain
	tests/need.sh
	$(CARGO_T) build --locked --target $(TARGET) --workspace --bins $(TEST_FEATURES)
	rm -rf $(KINDS_SEEN) && mkdir -p $(KINDS_SEEN)
	DOT_KINDS_SEEN=$(KINDS_SEEN) DOT_STATIC_DIR=$(CURDIR)/$(DBG) $(CARGO_T) test --target $(TARGET) --workspace --no-fail-fast $(TEST_FEATURES)
	DOT_KINDS_SEEN=$(KINDS_SEEN) $(CARGO_T) test --target $(TARGET) -p tests --test errors_catalogue $(TEST_FEATURES) -- --ignored

# Fuzzing (nightly + cargo-fuzz; never part of `make test`): every target in fuzz/fuzz_targets for
# FUZZ_SECONDS each (default 600), from the committed seeds in fuzz/corpus/. See fuzz/run.sh.
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?= entry publisher journal response elf minisign
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh $(FUZZ_TARGETS)

# Soak: 2,000 sequential launches and two concurrent streams of 500, on optimized binaries that
# carry the test hooks (profile `soak`, its own directory: release binaries never have them).
SOAK_SEQUENTIAL ?= 2000
SOAK_STREAM     ?= 500
SOAK := target/$(TARGET)/soak
soak: toolchain
	$(CARGO_T) build --profile soak --target $(TARGET) --workspace --bins $(TEST_FEATURES)
	DOT_STATIC_DIR=$(CURDIR)/$(SOAK) DOT_SOAK_SEQUENTIAL=$(SOAK_SEQUENTIAL) DOT_SOAK_STREAM=$(SOAK_STREAM) \
		$(CARGO_T) test --profile soak --target $(TARGET) -p tests --test soak $(TEST_FEATURES) -- --test-threads 1 --nocapture

demo: build
	rm -rf $(DEMO_ROOT) $(DEMO_OUT)
	mkdir -p $(DEMO_OUT)
	$(REL)/dot-register init --root $(DEMO_ROOT) --dev
	$(REL)/dot-register dev --root $(DEMO_ROOT) --name hello --exe $(REL)/hello --containment audit --input name:string:optional
	$(REL)/dot-verify entry --root $(DEMO_ROOT) hello
	$(REL)/dot-launch --root $(DEMO_ROOT) hello --allow-audit-plugin --input name=demo --target $(DEMO_OUT)
	@printf '%s: ' $(DEMO_OUT)/hello.txt; cat $(DEMO_OUT)/hello.txt
	$(REL)/dot-sandbox probe
	$(REL)/dot-register dev --root $(DEMO_ROOT) --name hello-sandboxed --exe $(REL)/hello --containment process --input name:string:optional
	$(REL)/dot-launch --root $(DEMO_ROOT) hello-sandboxed --require-process-sandbox --input name=sandbox --target $(DEMO_OUT)
	@printf '%s: ' $(DEMO_OUT)/hello.txt; cat $(DEMO_OUT)/hello.txt

check: toolchain msrv-deps
	$(CARGO) fmt --all -- --check
	$(CARGO_T) clippy --target $(TARGET) --workspace --all-targets -- -D warnings

# The declared minimum Rust version (Cargo.toml `rust-version`), checked with the one toolchain at
# hand (docs/design.md "Toolchain"): clippy's `incompatible_msrv` (an error here, with -D warnings:
# any standard-library item newer than it), and .ci/msrv-deps: every
# locked dependency of the host target must declare a `rust-version` no newer (those that declare
# none are listed). Language features newer than it are checked by no tool.
msrv-deps:
	.ci/msrv-deps $(TARGET)

# Measures launches, confinement, digests, commit, reap and RSS in one run and writes BENCHMARKS.md
# (installs hyperfine and bubblewrap when missing). Never part of `make test`.
bench:
	bench/run.sh

# Every dot-* tool in BINDIR (dot-sandbox beside dot-launch: it is found next to it, never through
# PATH), dot-canary in LIBEXECDIR/dot (out of PATH; `dot-sandbox probe --prove` finds it there),
# each without its `.comment` section (the toolchains' version strings), section 1 and 7 man pages
# in MANDIR, the docs in DOCDIR (README.md and docs/ as in the source tree), the bash completion
# in COMPLETIONSDIR. Nothing is written outside DESTDIR: the completion is generated from the
# built tools' --help into a temporary file. `uninstall` removes exactly these files, and
# LIBEXECDIR/dot, DOCDIR/docs and DOCDIR, which are dot's own; shared directories (BINDIR, MANDIR,
# COMPLETIONSDIR, which bash-completion owns) stay.
install: $(if $(filter release,$(PROFILE)),installable)
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR)/dot $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(DOCDIR)/docs
	for t in $(BIN_TOOLS); do $(INSTALL) -m 0755 $(BUILT)/$$t $(DESTDIR)$(BINDIR)/$$t || exit 1; done
	for t in $(LIBEXEC_TOOLS); do $(INSTALL) -m 0755 $(BUILT)/$$t $(DESTDIR)$(LIBEXECDIR)/dot/$$t || exit 1; done
	for t in $(BIN_TOOLS:%=$(DESTDIR)$(BINDIR)/%) $(LIBEXEC_TOOLS:%=$(DESTDIR)$(LIBEXECDIR)/dot/%); do $(OBJCOPY) --remove-section=.comment $$t || exit 1; done
	$(INSTALL) -m 0644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	$(INSTALL) -m 0644 $(MAN7) $(DESTDIR)$(MANDIR)/man7/
	$(INSTALL) -m 0644 $(TOP_DOCS) $(DESTDIR)$(DOCDIR)/
	$(INSTALL) -m 0644 $(SUB_DOCS) $(DESTDIR)$(DOCDIR)/docs/
	$(INSTALL) -d $(DESTDIR)$(COMPLETIONSDIR)
	tmp=$$(mktemp) && trap 'rm -f "$$tmp"' EXIT && \
		packaging/completion.sh $(BUILT) $(BIN_TOOLS) > "$$tmp" && \
		for t in $(BIN_TOOLS); do $(INSTALL) -m 0644 "$$tmp" $(DESTDIR)$(COMPLETIONSDIR)/$$t || exit 1; done

# What `make install` installs is the last release build: it builds (or rebuilds) only when there
# is none, or when the one there has other layer paths compiled in than this PREFIX/SYSCONFDIR/
# LIBEXECDIR give (a build for /usr/local installed under /usr would read the wrong layers), and
# says which. So `make && sudo make install` needs no toolchain as root.
installable:
	@if [ ! -f $(LAYERS_STAMP) ]; then \
		echo "make install: no release build in $(BUILT) yet: building it (PREFIX=$(PREFIX))" >&2; \
		$(MAKE) --no-print-directory build; \
	elif [ "$$(cat $(LAYERS_STAMP))" != '$(LAYERS)' ]; then \
		echo "make install: the release build in $(BUILT) has the layers $$(cat $(LAYERS_STAMP)) compiled in, PREFIX=$(PREFIX) needs $(LAYERS): rebuilding" >&2; \
		$(MAKE) --no-print-directory build; \
	fi

uninstall:
	for t in $(BIN_TOOLS); do rm -f $(DESTDIR)$(BINDIR)/$$t; done
	for t in $(LIBEXEC_TOOLS); do rm -f $(DESTDIR)$(LIBEXECDIR)/dot/$$t; done
	rmdir $(DESTDIR)$(LIBEXECDIR)/dot 2>/dev/null || true
	for m in $(notdir $(MAN1)); do rm -f $(DESTDIR)$(MANDIR)/man1/$$m; done
	for m in $(notdir $(MAN7)); do rm -f $(DESTDIR)$(MANDIR)/man7/$$m; done
	for d in $(TOP_DOCS) $(SUB_DOCS); do rm -f $(DESTDIR)$(DOCDIR)/$$d; done
	for t in $(BIN_TOOLS); do rm -f $(DESTDIR)$(COMPLETIONSDIR)/$$t; done
	rmdir $(DESTDIR)$(DOCDIR)/docs 2>/dev/null || true
	rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null || true

# A Debian package of dot from `make install PREFIX=/usr` (binaries, man pages, docs), built by
# dpkg-deb with root-owned files and checked by lintian (packaging/deb.sh; the overrides it ships
# are justified in packaging/lintian-overrides).
DEB_VERSION ?= $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
DEB_ARCH    ?= $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB_DIR     ?= target/deb
DEB_STAGE   := $(DEB_DIR)/stage
DEB         := $(DEB_DIR)/dot_$(DEB_VERSION)_$(DEB_ARCH).deb
# The release build is made with PREFIX=/usr, so the layers it reads are /usr/lib/dot and /etc/dot.
deb:
	$(if $(filter release,$(PROFILE)),$(MAKE) --no-print-directory build PREFIX=/usr)
	rm -rf $(DEB_STAGE) $(DEB)
	$(MAKE) --no-print-directory install PREFIX=/usr DESTDIR=$(abspath $(DEB_STAGE)) PROFILE=$(PROFILE) BUILT=$(BUILT)
	packaging/deb.sh $(DEB_STAGE) $(DEB) $(DEB_VERSION) $(DEB_ARCH)

clean:
	$(CARGO) clean
	rm -rf $(DEMO_ROOT) $(DEMO_OUT)
