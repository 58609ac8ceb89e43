# The two commands of the README:
#   make demo   installs what is missing, builds, converts the bundled example to every output format
#   make test   installs what is missing, builds and runs every test (../shared/fixtures when present)
#   make fuzz   runs every fuzz target for FUZZ_SECONDS (default 180) each
.PHONY: setup build pgo demo test explore lint bench fuzz memcheck install dist docker

FUZZ_SECONDS ?= 180
# make test draws the same random traces on every run, so a red run is always reproducible;
# make explore draws 20,000 new ones per property to look for what those miss.
PROPTEST_RNG_SEED ?= 1124
PROPTEST_CASES ?= 256

setup:
	scripts/setup.sh

build: setup
	cargo build --release --locked

# target/pgo/tracex: the release build optimised with a profile of its own conversions
# (scripts/pgo.sh); what make bench measures and make install and make dist ship.
pgo: setup
	scripts/pgo.sh

demo: build
	scripts/demo.sh

test: setup
	cargo build --release --locked
	# a copy: the wheel test's maturin build rewrites target/release/tracex while tests run
	cp target/release/tracex target/tracex-under-test
	PROPTEST_RNG_SEED=$(PROPTEST_RNG_SEED) PROPTEST_CASES=$(PROPTEST_CASES) \
	TRACEX_BIN=$(CURDIR)/target/tracex-under-test cargo test --locked --workspace -- --test-threads=2 --show-output
	cargo check --locked --no-default-features
	# the profiled build converts as target/release/tracex does, byte for byte
	scripts/pgo.sh --check
	$(MAKE) memcheck

# Memory safety: the FFI under valgrind and AddressSanitizer, the bindings checked for aarch64,
# and every fuzz target replaying its saved corpus.
memcheck:
	scripts/valgrind.sh
	scripts/sanitize.sh
	scripts/cross-check.sh
	scripts/fuzz.sh regress

explore: build
	PROPTEST_CASES=20000 TRACEX_BIN=$(CURDIR)/target/release/tracex \
	  cargo test --release --locked --test tests random_ -- --test-threads=2

fuzz: setup
	scripts/fuzz.sh run $(FUZZ_SECONDS)

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	cargo clippy --all-targets --locked --no-default-features -- -D warnings

bench: setup
	scripts/bench.sh

# `make install` (PREFIX=/usr/local, DESTDIR for packaging): the binary, its man pages and the
# bash, zsh and fish completions where those shells look for them.
PREFIX ?= /usr/local
install: pgo
	install -Dm755 target/pgo/tracex $(DESTDIR)$(PREFIX)/bin/tracex
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	target/pgo/tracex man --dir $(DESTDIR)$(PREFIX)/share/man/man1
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	target/pgo/tracex completions bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/tracex
	target/pgo/tracex completions zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_tracex
	target/pgo/tracex completions fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/tracex.fish

# The release archive target/dist/tracex-VERSION-TARGET.tar.gz (binary, completions, man, README, licences).
dist: setup
	scripts/dist.sh

docker:
	docker build -t tracex .
