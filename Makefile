# spillway: GNU Make + pkg-config, C11.
#
#   make            build ./spillway
#   make demo       install missing packages (as root), build, run the demo
#   make check      install missing packages, build, run every test with prove
#   make san        unit tests under AddressSanitizer + UBSan
#   make san-daemon the live daemon tests against an ASan + UBSan spillway
#   make valgrind   unit tests under valgrind
#   make fuzz       build the libFuzzer drivers (clang) and run each FUZZ_SECONDS
#   make bench      build and run the benchmarks in bench/
#   make deb        build/spillway_VERSION_ARCH.deb from the tree (dpkg-deb)
#   make install    install into $(DESTDIR)$(PREFIX) (default /usr/local): the
#                   binary, man page, systemd unit, shell completion
#
# SAN=address,undefined builds everything with those sanitizers into build/san.

CC      ?= cc
CFLAGS  ?= -O2 -g
WERROR  ?= -Werror
SAN     ?=
# libcurl, libxml2 and libmicrohttpd are compiled against but not linked:
# src/util/netlibs.c opens them on first use, so CLI processes never load them.
LINKED_PKGS = yaml-0.1 sqlite3 jansson openssl
PKGS     = $(LINKED_PKGS) libcurl libxml-2.0 libmicrohttpd
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(LINKED_PKGS) 2>/dev/null || echo -lyaml -lsqlite3 -ljansson -lssl -lcrypto)
XCFLAGS  = -std=c11 -D_GNU_SOURCE -Wall -Wextra $(WERROR) -Isrc $(PKG_CFLAGS) -MMD -MP
LDLIBS   = $(PKG_LIBS) -lm -lpthread

ifneq ($(SAN),)
B        = build/san
CFLAGS  += -fsanitize=$(SAN) -fno-sanitize-recover=all -fno-omit-frame-pointer -O1
LDFLAGS += -fsanitize=$(SAN)
else
B        = build
endif

UTIL_SRC = $(wildcard src/util/*.c)
CORE_SRC = $(wildcard src/core/*.c)
SIM_SRC  = $(wildcard src/sim/*.c)
CONFIG_SRC = $(wildcard src/config/*.c)
CLI_SRC  = $(wildcard src/cli/*.c)
BACKEND_SRC = $(wildcard src/backends/*/*.c src/backends/*.c)
DAEMON_SRC = $(wildcard src/daemon/*.c)
PROVIDER_SRC = $(wildcard src/providers/*/*.c src/providers/*.c)
LIB_SRC  = $(UTIL_SRC) $(CORE_SRC) $(CONFIG_SRC) $(SIM_SRC) $(BACKEND_SRC) $(DAEMON_SRC) $(PROVIDER_SRC)
LIB_OBJ  = $(LIB_SRC:%.c=$(B)/%.o) $(B)/gen/ui_assets.o
# The dashboard's files, embedded into the binary by web/embed.c (a host
# tool, built without sanitizers) as build/gen/ui_assets.c.
WEB_SRC  = $(sort $(wildcard web/*.html web/*.js web/*.css))
CLI_OBJ  = $(CLI_SRC:%.c=$(B)/%.o)
TEST_SRC = $(wildcard tests/*/test_*.c)
TEST_BIN = $(TEST_SRC:%.c=$(B)/%)
BENCH_SRC = $(wildcard bench/*.c)
BENCH_BIN = $(BENCH_SRC:%.c=build/%)
FUZZ_SRC = $(wildcard fuzz/fuzz_*.c)
FUZZ_BIN = $(FUZZ_SRC:%.c=build/%)
FUZZ_SECONDS ?= 20

.PHONY: all demo check check-unit san san-daemon valgrind fuzz bench clean deps deps-test install deb

all: spillway

spillway: $(B)/spillway
	@if [ "$(B)" = build ]; then cp $(B)/spillway spillway.tmp && mv -f spillway.tmp spillway; fi

$(B)/spillway: $(CLI_OBJ) $(B)/libspillway.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/libspillway.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

build/tools/embed: web/embed.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -Wall -Wextra $(WERROR) -o $@ $<

build/gen/ui_assets.c: build/tools/embed $(WEB_SRC)
	@mkdir -p $(dir $@)
	build/tools/embed $@ $(WEB_SRC)

$(B)/gen/ui_assets.o: build/gen/ui_assets.c
	@mkdir -p $(dir $@)
	$(CC) $(XCFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(XCFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/tests/%: tests/%.c $(B)/libspillway.a tests/tap.h
	@mkdir -p $(dir $@)
	$(CC) $(XCFLAGS) -Itests $(CFLAGS) $(LDFLAGS) -o $@ $< $(B)/libspillway.a $(LDLIBS)

deps:
	@scripts/deps.sh build

deps-test:
	@scripts/deps.sh test

demo: deps
	@$(MAKE) --no-print-directory spillway
	@mkdir -p build
	./spillway demo --report build/demo-report.html
	@echo
	@echo "== the same engine, live: spillway serve with examples/serve.yaml"
	sh scripts/live-demo.sh

# Programs driven by tests/slurm/*.sh against a real Slurm cluster.
SLURM_TEST_BIN = $(B)/tests/slurm/slurm_backend

$(B)/tests/slurm/%: tests/slurm/%.c $(B)/libspillway.a tests/tap.h
	@mkdir -p $(dir $@)
	$(CC) $(XCFLAGS) -Itests $(CFLAGS) $(LDFLAGS) -o $@ $< $(B)/libspillway.a $(LDLIBS)

# Programs driven by tests/ssh/*.sh against a cluster of namespaces with sshd.
SSH_TEST_BIN = $(B)/tests/ssh/ssh_backend

$(B)/tests/ssh/%: tests/ssh/%.c $(B)/libspillway.a tests/tap.h
	@mkdir -p $(dir $@)
	$(CC) $(XCFLAGS) -Itests $(CFLAGS) $(LDFLAGS) -o $@ $< $(B)/libspillway.a $(LDLIBS)

# Programs driven by tests/providers/aws.sh against a fake EC2 endpoint.
AWS_TEST_BIN = $(B)/tests/providers/aws_e2e

$(B)/tests/providers/aws_e2e: tests/providers/aws_e2e.c $(B)/libspillway.a tests/tap.h
	@mkdir -p $(dir $@)
	$(CC) $(XCFLAGS) -Itests $(CFLAGS) $(LDFLAGS) -o $@ $< $(B)/libspillway.a $(LDLIBS)

tests: $(TEST_BIN) $(SLURM_TEST_BIN) $(SSH_TEST_BIN) $(AWS_TEST_BIN) spillway

# The live test files: each starts its own daemons (spillway, Slurm, sshd
# hosts, Prometheus, Chromium) on its own ports, directories and subnets,
# so files run side by side.  Most of their time is spent waiting on those
# daemons, not on the CPU: prove runs PROVE_JOBS files at once, the slowest
# first so that the lanes end together.
PROVE_JOBS ?= 2
SLOW_TESTS = tests/slurm/cloud.sh tests/ssh/backend.sh tests/slurm/recovery.sh \
	tests/slurm/daemon.sh tests/ssh/cloud.sh tests/daemon/spot_resume.sh \
	tests/providers/fake_ec2.sh tests/ssh/aws.sh
LIVE_TESTS = $(SLOW_TESTS) $(filter-out $(SLOW_TESTS),$(wildcard tests/daemon/*.sh) \
	$(wildcard tests/ui/*.sh) $(wildcard tests/slurm/*.sh) $(wildcard tests/ssh/*.sh) \
	$(wildcard tests/providers/*.sh) $(wildcard tests/backends/*.sh))

# Unit tests (C, TAP) and integration tests (shell, TAP), all through prove.
check: deps-test
	@$(MAKE) --no-print-directory tests
	prove -j$(PROVE_JOBS) --timer -e '' $(LIVE_TESTS) $(TEST_BIN) tests/cli/*.sh

# The live daemon tests (tests/daemon/*.sh, tests/ui/*.sh, and
# tests/slurm/*.sh and tests/ssh/*.sh against a real Slurm and real sshd
# hosts) against a sanitizer build of spillway: the daemon, HTTP layer,
# client and the Slurm and ssh backends under ASan and UBSan.
# Files that drive no spillway daemon or client (the fakes checked by
# their official clients, the AWS provider's own driver): san-daemon skips them.
# The kill -9 storm on the AWS account (tests/ssh/aws.sh) runs in make check
# only; the storm runs under ASan on the other pools.
SAN_SKIP = tests/providers/fake_ec2.sh tests/providers/aws.sh tests/providers/aws_moto.sh \
	tests/backends/kube_fake.sh
san-daemon:
	@$(MAKE) --no-print-directory SAN=address,undefined build/san/spillway \
	    build/san/tests/slurm/slurm_backend build/san/tests/ssh/ssh_backend
	SPILLWAY=build/san/spillway SPILLWAY_AWS_STORM=0 SPW_SLURM_TEST_BIN=$(CURDIR)/build/san/tests/slurm/slurm_backend \
	    SPW_SSH_TEST_BIN=$(CURDIR)/build/san/tests/ssh/ssh_backend \
	    prove -j$(PROVE_JOBS) --timer -e '' $(filter-out $(SAN_SKIP),$(LIVE_TESTS))

# The unit test programs are independent: PROVE_JOBS run at once.
check-unit: $(TEST_BIN)
	prove -j$(PROVE_JOBS) --timer -e '' $(TEST_BIN)

san:
	@$(MAKE) --no-print-directory SAN=address,undefined check-unit

# PROVE_JOBS programs at once; any failure (or error) fails the target.
valgrind: $(TEST_BIN)
	@printf '%s\n' $(TEST_BIN) | xargs -P $(PROVE_JOBS) -I{} sh -c \
	    'SPW_UNDER_VALGRIND=1 valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
	        {} >/dev/null || { echo "valgrind: {} failed"; exit 1; }' && \
	    echo "valgrind: $(words $(TEST_BIN)) test programs clean"

# The library is compiled once for every fuzzer (with coverage for
# libFuzzer, ASan and UBSan); each fuzzer is its one file linked to it.
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -g -O1 -Isrc $(PKG_CFLAGS) -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined
FUZZ_OBJ = $(LIB_SRC:%.c=build/fuzz/obj/%.o) build/fuzz/obj/gen/ui_assets.o

build/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

build/fuzz/obj/gen/ui_assets.o: build/gen/ui_assets.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

build/fuzz/libspillway-fuzz.a: $(FUZZ_OBJ)
	rm -f $@ && ar rcs $@ $^

build/fuzz/%: fuzz/%.c build/fuzz/libspillway-fuzz.a
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< build/fuzz/libspillway-fuzz.a $(LDLIBS)

# Each fuzzer runs FUZZ_SECONDS; with make -j, several at once.
.SECONDARY: $(FUZZ_BIN)
fuzz: $(FUZZ_BIN:build/fuzz/%=fuzz-run-%)

fuzz-run-%: build/fuzz/%
	@name=$*; mkdir -p build/fuzz/work/$$name; \
	echo "fuzz: $$name for $(FUZZ_SECONDS) s"; \
	build/fuzz/$$name -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 -print_final_stats=0 \
	    -artifact_prefix=build/fuzz/$$name- \
	    build/fuzz/work/$$name fuzz/corpus/$$name >build/fuzz/$$name.log 2>&1 \
	    || { tail -40 build/fuzz/$$name.log; exit 1; }; \
	grep -E '^#[0-9]+[[:space:]]+DONE' build/fuzz/$$name.log | sed "s/^/fuzz: $$name: /"

build/bench/%: bench/%.c build/libspillway.a
	@mkdir -p $(dir $@)
	$(CC) $(XCFLAGS) $(CFLAGS) -O2 -o $@ $< build/libspillway.a $(LDLIBS)

bench: spillway $(BENCH_BIN)
	bench/run.sh

# Installation (docs/install.md).  The unit names $(BINDIR)/spillway.
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR   = $(PREFIX)/bin
MANDIR   = $(PREFIX)/share/man/man1
UNITDIR ?= $(PREFIX)/lib/systemd/system

build/spillway.1: spillway scripts/gen-man.sh
	@mkdir -p build
	sh scripts/gen-man.sh ./spillway $@

install: spillway build/spillway.1
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR) $(DESTDIR)$(UNITDIR) \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
	    $(DESTDIR)$(PREFIX)/share/zsh/site-functions $(DESTDIR)$(PREFIX)/share/doc/spillway/examples
	install -m 0755 spillway $(DESTDIR)$(BINDIR)/spillway
	install -m 0644 build/spillway.1 $(DESTDIR)$(MANDIR)/spillway.1
	sed 's|@BINDIR@|$(BINDIR)|g' deploy/systemd/spillway.service >$(DESTDIR)$(UNITDIR)/spillway.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/spillway.service
	install -m 0644 deploy/completion/spillway.bash \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions/spillway
	install -m 0644 deploy/completion/_spillway $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_spillway
	install -m 0644 examples/*.yaml $(DESTDIR)$(PREFIX)/share/doc/spillway/examples/

# A Debian package of the tree, no network: make install into a staging
# root, then dpkg-deb (docs/install.md).
deb: spillway build/spillway.1
	rm -rf build/deb && mkdir -p build/deb/DEBIAN
	$(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/build/deb PREFIX=/usr UNITDIR=/lib/systemd/system
	v=$$(./spillway --version | sed 's/^spillway //'); a=$$(dpkg --print-architecture); \
	sed -e "s/@VERSION@/$$v/" -e "s/@ARCH@/$$a/" deploy/debian/control.in >build/deb/DEBIAN/control && \
	install -m 0755 deploy/debian/postinst deploy/debian/prerm deploy/debian/postrm build/deb/DEBIAN/ && \
	dpkg-deb --root-owner-group -Zgzip -z1 --build build/deb build/spillway_$${v}_$${a}.deb

clean:
	rm -rf build spillway

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(FUZZ_OBJ:.o=.d)
