# dot — build, test, demo, install.
#
# Every binary is built static (+crt-static) for the host target, so the plugins the demo and the
# tests run can be confined by dot-sandbox, and every dot-* tool lands in one directory
# (target/$(TARGET)/$(PROFILE)) with dot-sandbox beside dot-launch.

CARGO   ?= cargo
TARGET  ?= $(shell rustc -vV | sed -n 's/^host: //p')
RUSTFLAGS_STATIC := -C target-feature=+crt-static
CARGO_T := RUSTFLAGS='$(RUSTFLAGS_STATIC)' $(CARGO)

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
DESTDIR ?=

REL     := target/$(TARGET)/release
DBG     := target/$(TARGET)/debug
TOOLS   := dot-verify dot-register dot-launch dot-sandbox dot-reap dot-discard dot-journal-fmt dot-canary

DEMO_ROOT := demo/root
DEMO_OUT  := demo/out

.PHONY: all build test demo check bench install uninstall clean

all: build

build:
	$(CARGO_T) build --release --target $(TARGET) --workspace --bins

# Debug binaries (static too) are what the tests run; DOT_STATIC_DIR tells them where. Only these
# builds carry dot-launch's test-only hooks (failpoints, pause point, pretend ABI); release never does.
TEST_FEATURES := --features launch/test-hooks
test:
	$(CARGO_T) build --target $(TARGET) --workspace --bins $(TEST_FEATURES)
	DOT_STATIC_DIR=$(CURDIR)/$(DBG) $(CARGO_T) test --target $(TARGET) --workspace --no-fail-fast $(TEST_FEATURES)

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

check:
	$(CARGO) fmt --all -- --check
	$(CARGO_T) clippy --target $(TARGET) --workspace --all-targets -- -D warnings

# Measures launches, confinement, digests, commit, reap and RSS in one run and writes BENCHMARKS.md
# (installs hyperfine and bubblewrap when missing). Never part of `make test`.
bench:
	bench/run.sh

install: build
	install -d $(DESTDIR)$(BINDIR)
	for t in $(TOOLS); do install -m 0755 $(REL)/$$t $(DESTDIR)$(BINDIR)/$$t; done

uninstall:
	for t in $(TOOLS); do rm -f $(DESTDIR)$(BINDIR)/$$t; done

clean:
	$(CARGO) clean
	rm -rf $(DEMO_ROOT) $(DEMO_OUT)
