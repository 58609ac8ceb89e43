# The two commands of the README:
#   make demo   installs what is missing, builds, converts the bundled example to every output format
#   make test   installs what is missing, builds and runs every test (../shared/fixtures when present)
#   make fuzz   runs every fuzz target for FUZZ_SECONDS (default 180) each
.PHONY: setup build demo test lint bench fuzz memcheck

FUZZ_SECONDS ?= 180

setup:
	scripts/setup.sh

build: setup
	cargo build --release --locked

demo: build
	scripts/demo.sh

test: setup
	cargo build --release --locked
	TRACEX_BIN=$(CURDIR)/target/release/tracex cargo test --locked --workspace -- --test-threads=2 --show-output
	cargo check --locked --no-default-features
	$(MAKE) memcheck

# Memory safety: the FFI under valgrind and AddressSanitizer, the bindings checked for aarch64,
# and every fuzz target replaying its saved corpus.
memcheck:
	scripts/valgrind.sh
	scripts/sanitize.sh
	scripts/cross-check.sh
	scripts/fuzz.sh regress

fuzz: setup
	scripts/fuzz.sh run $(FUZZ_SECONDS)

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	cargo clippy --all-targets --locked --no-default-features -- -D warnings

bench: build
	scripts/bench.sh
