# seance — `make run` builds and starts the shell; `make test` runs the whole suite.
# Both install the Debian packages they need first, only when missing.

SWIFT        ?= swift
# Release builds check exclusivity at compile time only, in swift-nio, GRDB and swift-crypto as in
# seance's own modules (Package.swift): their run-time checks were 4,300 of the 164,700
# instructions a message received alone costs (`make bench`'s cost section). Debug builds, which
# the tests and fuzzers run, keep every check.
RELEASE_FLAGS = -c release --static-swift-stdlib -Xswiftc -enforce-exclusivity=unchecked
BUILD_PACKAGES = libedit-dev libsqlite3-dev libstb-dev libmosquitto-dev libqrencode-dev pkg-config
# What the tests use besides the build: namespaces and routes, packet loss, a terminal, a reference,
# brokers (started by the tests themselves, inside their namespaces) and MQTT clients; groff to
# read the manual page, and the three shells whose completions are loaded; nc, the transfers
# benchmark's reference; valgrind and binutils (objcopy), the cost of a message in instructions;
# gdb, where a process that hangs waits (the tests' reports and the watchdog's).
TEST_PACKAGES  = iproute2 nftables tmux sqlite3 util-linux python3 python3-venv python3-cryptography time mosquitto mosquitto-clients nats-server \
                 groff-base bash-completion zsh fish netcat-openbsd valgrind binutils gdb
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all setup setup-test build release run test bench soak fuzz clean install uninstall screenshots

all: build

# Installs the packages in $(1) that dpkg does not know yet. RUNLEVEL=1: a package's service
# (mosquitto's) is installed, not started; the tests start their own brokers in their namespaces.
define install_missing
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq $$missing; \
	fi
endef

setup:
	$(call install_missing,$(BUILD_PACKAGES))

setup-test: setup
	$(call install_missing,$(TEST_PACKAGES))

build: setup
	$(SWIFT) build

release: setup
	$(SWIFT) build $(RELEASE_FLAGS)

run: release
	./.build/release/seance $(ARGS)

# `make install` (PREFIX, default /usr/local; DESTDIR for a staging root): the stripped release
# binary, seance(1) and the completions of bash, zsh and fish where each shell looks for them,
# all written by the binary itself (the manual page from its own registry and flags).
PREFIX   ?= /usr/local
BINDIR    = $(DESTDIR)$(PREFIX)/bin
MANDIR    = $(DESTDIR)$(PREFIX)/share/man/man1
BASHDIR   = $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSHDIR    = $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISHDIR   = $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
INSTALLED = $(BINDIR)/seance $(MANDIR)/seance.1 $(BASHDIR)/seance $(ZSHDIR)/_seance $(FISHDIR)/seance.fish
install: release
	install -d $(BINDIR) $(MANDIR) $(BASHDIR) $(ZSHDIR) $(FISHDIR)
	install -m 755 -s .build/release/seance $(BINDIR)/seance
	.build/release/seance --manual-page > .build/seance.1
	install -m 644 .build/seance.1 $(MANDIR)/seance.1
	for shell in bash zsh fish; do .build/release/seance --generate-completion-script $$shell > .build/seance.$$shell || exit 1; done
	install -m 644 .build/seance.bash $(BASHDIR)/seance
	install -m 644 .build/seance.zsh $(ZSHDIR)/_seance
	install -m 644 .build/seance.fish $(FISHDIR)/seance.fish

uninstall:
	rm -f $(INSTALLED)

# The README's pictures, remade from real sessions after a change of the views: seance in tmux
# inside a private namespace, drawn by Debian's headless Chromium with DejaVu and Noto Color Emoji.
SCREENSHOT_PACKAGES = tmux chromium fonts-dejavu-core fonts-noto-color-emoji iproute2 util-linux python3
screenshots: release
	$(call install_missing,$(SCREENSHOT_PACKAGES))
	scripts/screenshots --binary .build/release/seance --out docs/screenshots

# Python packages of the tests and benchmarks, in a virtual environment of their own (nothing
# is installed system-wide): independent implementations of Noise for NoiseTests (noiseprotocol,
# which brings cryptography) and of X3DH for X3DHTests (x3dh), and an MQTT client for the broker
# load scripts (paho-mqtt). Made outside the namespace (it downloads from PyPI), again only when
# the list changes (the list names the stamp).
TEST_PYTHON = .build/test-venv/bin/python3
TEST_PYTHON_PACKAGES = noiseprotocol==0.3.1 paho-mqtt==2.1.0 x3dh==1.3.0
TEST_VENV = .build/test-venv/packages-$(shell echo $(TEST_PYTHON_PACKAGES) | md5sum | cut -c1-12)
$(TEST_VENV):
	python3 -m venv .build/test-venv
	.build/test-venv/bin/pip install -q $(TEST_PYTHON_PACKAGES)
	touch $@

# The build runs outside the namespace; the tests run inside one that has only loopback, under a
# watchdog: a run still going after TEST_SECONDS (some three times a slow machine's) prints where
# each of its processes waits and is ended.
TEST_SECONDS ?= 1500
test: setup-test $(TEST_VENV)
	$(SWIFT) build --build-tests
	scripts/watchdog $(TEST_SECONDS) scripts/in-netns $(SWIFT) test --skip-build $(TEST_ARGS)

# libFuzzer (with AddressSanitizer) on each hand-written parser, FUZZ_SECONDS each, from the
# seed corpus in fuzz/corpus; new inputs it finds go to .build-fuzz/corpus, crashes to
# .build-fuzz/crashes. The plain build of the same target replays the corpus (`make test` does).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS  = packet tokenizer image broker engine reassembly
# swiftc takes the last -sanitize= it is given, and SwiftPM passes one for each --sanitize in an
# order of its own: with address last, no Swift code was instrumented for coverage (a fuzzer
# blind to everything but the C shims). The combined flag, given after them, is the one taken.
fuzz: setup
	$(SWIFT) build --build-path .build-fuzz --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING \
	    --product SeanceFuzz
	scripts/fuzz .build-fuzz/debug/SeanceFuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

bench: setup-test release $(TEST_VENV)
	scripts/in-netns python3 bench/bench.py --binary .build/release/seance --python $(TEST_PYTHON) \
	    --kernel-backlog $$(cat /proc/sys/net/core/netdev_max_backlog) \
	    --neighbour-table $$(cat /proc/sys/net/ipv4/neigh/default/gc_thresh3) $(BENCH_ARGS)

# Ten minutes of each hostile peer (SOAK_MINUTES each), the victim's memory sampled: outside
# `make bench` (it takes some 45 minutes).
SOAK_MINUTES ?= 10
soak: setup-test release $(TEST_VENV)
	scripts/in-netns python3 bench/bench.py --binary .build/release/seance --python $(TEST_PYTHON) --only soak \
	    --soak-minutes $(SOAK_MINUTES) --json .build/soak.json

clean:
	rm -rf .build
