# The two commands of the README:
#   make demo   installs what is missing, builds, converts the bundled example to every output format
#   make test   installs what is missing, builds and runs every test (../shared/fixtures when present)
.PHONY: setup build demo test lint bench

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

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	cargo clippy --all-targets --locked --no-default-features -- -D warnings

bench: build
	scripts/bench.sh
