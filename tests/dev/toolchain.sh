#!/usr/bin/env bash
# Makes sure the toolchain rust-toolchain.toml names is installed with what the build needs:
# the wasm32-wasip2 target (plugins) and, with `lint`, rustfmt and clippy. rustup installs a
# missing toolchain from rust-toolchain.toml, but it does not add a target or component to a
# toolchain that is already installed, so this adds them. Idempotent; quick when all is there.
set -euo pipefail
cd "$(dirname "$0")/../.."

channel=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' rust-toolchain.toml)
target=wasm32-wasip2
components=()
[ "${1:-}" = lint ] && components=(rustfmt clippy)

if ! command -v rustup >/dev/null; then
	# No rustup (a distribution's Rust): nothing can be added, so check and say what is missing.
	libdir=$(rustc --print target-libdir --target "$target" 2>/dev/null || true)
	if [ -z "$libdir" ] || [ ! -d "$libdir" ]; then
		echo "error: the Rust standard library for $target is not installed, and rustup is not available to add it" >&2
		exit 1
	fi
	exit 0
fi

if ! rustup toolchain list | grep -q "^$channel"; then
	echo "installing Rust $channel (rust-toolchain.toml)"
	rustup toolchain install "$channel" --profile minimal --target "$target" \
		--component rustfmt --component clippy
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
