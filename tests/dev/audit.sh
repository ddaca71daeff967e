#!/usr/bin/env bash
# `make audit`: cargo-deny over Cargo.lock with deny.toml (every exception there has its reason).
#
# Licences, bans and sources need only crates.io (cargo metadata), so they always run.
# Advisories need the RustSec database, a git repository on GitHub. In order:
#   - ODH_ADVISORY_DB=<dir>: a git clone of github.com/rustsec/advisory-db, used as it is
#     (nothing is fetched). A clone counts as fresh from when it was cloned; cargo-deny refuses
#     a database more than 90 days old.
#   - otherwise cargo-deny fetches it into its default place ($CARGO_HOME/advisory-dbs); if the
#     fetch fails (no route to GitHub) a database fetched there earlier is used, saying its age;
#   - otherwise advisories are skipped, and the output says so.
# A database that is found and reports an advisory deny.toml does not ignore fails the audit.
set -euo pipefail
cd "$(dirname "$0")/../.."

cargo=${CARGO:-cargo}
# cargo-deny names the directory of a database after its URL: this is the default URL's.
db_dir_name=advisory-db-3157b0e258782691

echo "audit: licences, bans and sources (deny.toml)"
"$cargo" deny --locked check licenses bans sources

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

advisories() { # $1: the deny.toml to use
	"$cargo" deny --offline --locked --config "$1" check advisories
}

if [ -n "${ODH_ADVISORY_DB:-}" ]; then
	[ -d "$ODH_ADVISORY_DB" ] || {
		echo "audit: ODH_ADVISORY_DB=$ODH_ADVISORY_DB is not a directory" >&2
		exit 1
	}
	db=$(cd "$ODH_ADVISORY_DB" && pwd)
	if [ ! -d "$db/crates" ] || ! git -C "$db" rev-parse --git-dir >/dev/null 2>&1; then
		echo "audit: ODH_ADVISORY_DB=$ODH_ADVISORY_DB is not a git clone of the RustSec advisory-db" >&2
		exit 1
	fi
	echo "audit: advisories, database ODH_ADVISORY_DB=$db ($(git -C "$db" log -1 --format='last commit %cs'))"
	# deny.toml keeps cargo-deny's default database directory; a copy of it points to one
	# holding only this database (same lines, so diagnostics' line numbers still hold).
	mkdir "$tmp/dbs"
	ln -s "$db" "$tmp/dbs/$db_dir_name"
	sed "s|^db-path = .*|db-path = \"$tmp/dbs\"|" deny.toml >"$tmp/deny.toml"
	grep -q "^db-path = \"$tmp/dbs\"" "$tmp/deny.toml" || {
		echo "audit: deny.toml has no db-path line to point at ODH_ADVISORY_DB" >&2
		exit 1
	}
	advisories "$tmp/deny.toml"
	exit 0
fi

default_db="${CARGO_HOME:-$HOME/.cargo}/advisory-dbs/$db_dir_name"
echo "audit: advisories, fetching the RustSec database into $default_db"
if GIT_TERMINAL_PROMPT=0 timeout 300 "$cargo" deny fetch db >"$tmp/fetch.log" 2>&1; then
	advisories deny.toml
	exit 0
fi
if [ ! -d "$default_db/crates" ]; then
	echo "audit: advisories SKIPPED: the RustSec database could not be fetched and none was fetched before:"
	grep -v '^\s*$' "$tmp/fetch.log" | tail -n 2 | sed 's/^/    /'
	echo "    To check them, give a git clone of github.com/rustsec/advisory-db:"
	echo "    ODH_ADVISORY_DB=/path/to/advisory-db make audit"
	exit 0
fi
# A failed `git fetch` still rewrites FETCH_HEAD, which cargo-deny reads as the time of the last
# update: its own 90-day staleness check cannot see this case, so the age is said here.
age_days=$((($(date +%s) - $(git -C "$default_db" log -1 --format=%ct)) / 86400))
echo "audit: the fetch failed; using the database fetched before (last commit $age_days days ago)"
if [ "$age_days" -gt 90 ]; then
	echo "audit: WARNING: that database is more than 90 days old: advisories published since are not checked"
fi
advisories deny.toml
