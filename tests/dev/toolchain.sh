#!/usr/bin/env bash
# Makes sure the toolchain rust-toolchain.toml names is installed with what the build needs:
# the wasm32-wasip2 target (plugins) and, with `lint`, rustfmt, clippy and cargo-deny (`make
# audit`). rustup installs a missing toolchain from rust-toolchain.toml, but it does not add a
# target or component to a toolchain that is already installed, so this adds them. Idempotent;
# quick when all is there.
set -euo pipefail
cd "$(dirname "$0")/../.."

channel=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' rust-toolchain.toml)
target=wasm32-wasip2
components=()
[ "${1:-}" = lint ] && components=(rustfmt clippy)

# cargo-deny for `make audit`, built from crates.io with its own Cargo.lock (--locked) by the
# pinned Rust, into ~/.cargo/bin (2 to 4 minutes on 2 cores, once per machine). Its release
# profile is fat LTO with one codegen unit, a long single-threaded last step; LTO off and 16
# units keep both cores busy to the end (the audit's speed does not depend on it). The shared
# CARGO_TARGET_DIR of a workspace build is not used: cargo install builds in a directory of its
# own and removes it. cargo-deny has no optional features to leave out (0.20 fetches its
# database with the git command, not a git library).
cargo_deny_version=0.20.2
install_cargo_deny() {
	[ "$(cargo deny --version 2>/dev/null)" = "cargo-deny $cargo_deny_version" ] && return
	echo "installing cargo-deny $cargo_deny_version into ~/.cargo/bin (cargo install --locked, 2 to 4 minutes; installed now: $(cargo deny --version 2>/dev/null || echo none))"
	env -u CARGO_TARGET_DIR CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
		cargo install --locked --quiet --force "cargo-deny@$cargo_deny_version"
}

if ! command -v rustup >/dev/null; then
	# No rustup (a distribution's Rust): nothing can be added, so check and say what is missing.
	libdir=$(rustc --print target-libdir --target "$target" 2>/dev/null || true)
	if [ -z "$libdir" ] || [ ! -d "$libdir" ]; then
		echo "error: the Rust standard library for $target is not installed, and rustup is not available to add it" >&2
		exit 1
	fi
	if [ "${1:-}" = lint ]; then install_cargo_deny; fi
	exit 0
fi

if ! rustup toolchain list | grep -q "^$channel"; then
	echo "installing Rust $channel (rust-toolchain.toml)"
	rustup toolchain install "$channel" --profile minimal --target "$target" \
		--component rustfmt --component clippy
	if [ "${1:-}" = lint ]; then install_cargo_deny; fi
	exit 0
fi
if ! rustup target list --installed --toolchain "$channel" | grep -qx "$target"; then
	echo "adding the $target target to Rust $channel"
	rustup target add --toolchain "$channel" "$target"
fi
for c in "${components[@]}"; do
	if ! rustup component list --installed --toolchain "$channel" | grep -q "^$c"; then
		echo "adding $c to Rust $channel"
		rustup component add --toolchain "$channel" "$c"
	fi
done
if [ "${1:-}" = lint ]; then install_cargo_deny; fi
