#!/usr/bin/env bash
# `make multiarch-check` (issue #36): for each architecture the image is built for, the static
# binary cross-compiled here (`make static-binary ARCH=…`) and run under Debian's qemu-user:
# its version, every built-in inspected, the built-ins precompiled for that architecture
# (`make precompiled`), then one reconcile and one admission evaluated on them, which must load
# without compiling. The compatibility hashes of the four differ (each engine finds only its own
# artifacts) and each engine refuses another's code put under its own name; arm64 also passes
# the run-check (`make run` under qemu). Wall times go to target/multiarch-check/times.tsv.
# ODH_MULTIARCH="arm64 s390x" checks only those.
set -euo pipefail
cd "$(dirname "$0")/../.."

arches=${ODH_MULTIARCH:-arm64 s390x ppc64le amd64}
out=target/multiarch-check
rm -rf "$out"
mkdir -p "$out"
times=$out/times.tsv
printf 'arch\tstep\twall_s\tcpu_s\n' >"$times"
exec 4>&1 # the times, whatever a step's output is redirected to
fail() {
	echo "multiarch-check: $*" >&2
	exit 1
}
# Runs "$@" and records its wall and CPU time (user + sys, children included) as step $1 of
# $arch: on a shared machine the CPU time is the steadier figure.
timed() {
	local step=$1 t=$out/.time
	shift
	local TIMEFORMAT='%R %U %S' status=0
	{ time "$@" 2>&3 || status=$?; } 3>&2 2>"$t"
	[ $status -eq 0 ] || return $status
	read -r wall user sys <"$t"
	printf '%s\t%s\t%s\t%.2f\n' "$arch" "$step" "$wall" "$(echo "$user + $sys" | bc)" | tee -a "$times" >&4
}

# A reconcile and an admission of the isvc built-in: the make-run sample's InferenceService,
# with its ServingRuntime in the cluster state the reconcile reads.
mkdir -p "$out/state"
cat >"$out/state/runtime.yaml" <<'YAML'
apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata:
  name: kserve-ovms
  namespace: odh-demo
spec:
  multiModel: false
  supportedModelFormats:
    - name: onnx
      version: "1"
      autoSelect: true
  containers:
    - name: kserve-container
      image: quay.io/opendatahub/openvino_model_server:stable
YAML
cat >"$out/isvc.yaml" <<'YAML'
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: demo-model
  namespace: odh-demo
  uid: 5f0c6a0e-3f9b-4f53-9d0e-1d2c3b4a5f60
  annotations:
    serving.kserve.io/deploymentMode: RawDeployment
spec:
  predictor:
    model:
      modelFormat:
        name: onnx
      runtime: kserve-ovms
      storageUri: s3://models/demo/
YAML

declare -A compat
for arch in $arches; do
	echo "=== $arch"
	timed build make -s --no-print-directory static-binary ARCH="$arch" >"$out/$arch-build.log" 2>&1 ||
		{ tail -30 "$out/$arch-build.log"; fail "$arch: make static-binary failed"; }
	bin=$(make -s --no-print-directory static-binary-path ARCH="$arch")
	read -r -a qemu <<<"$(make -s --no-print-directory static-binary-qemu ARCH="$arch")"

	timed version "${qemu[@]}" "$bin" --version >"$out/$arch-version.txt" || fail "$arch: --version"
	grep -q . "$out/$arch-version.txt" || fail "$arch: --version printed nothing"

	pre=$out/$arch-precompiled
	timed precompile make -s --no-print-directory precompiled ARCH="$arch" PRECOMPILED_OUT="$pre" \
		>"$out/$arch-precompile.json" || fail "$arch: plugin precompile"
	compat[$arch]=$(jq -r .compatibility "$out/$arch-precompile.json")
	mapfile -t builtins < <(jq -r '.plugins | keys[]' "$out/$arch-precompile.json")
	[ ${#builtins[@]} -gt 0 ] || fail "$arch: no built-in was precompiled"
	for name in "${builtins[@]}"; do
		ls "$pre"/*-"${compat[$arch]}".cwasm >/dev/null || fail "$arch: no $name artifact"
	done

	for name in "${builtins[@]}"; do
		timed "inspect $name" env ODH_PLUGIN_PRECOMPILED_DIR="$pre" "${qemu[@]}" "$bin" plugin inspect "$name" \
			>"$out/$arch-inspect-$name.json" ||
			fail "$arch: plugin inspect $name"
		[ "$(jq -r .name "$out/$arch-inspect-$name.json")" = "$name" ] || fail "$arch: inspect $name: wrong name"
	done

	# On the precompiled code only: the engine logs each component it loads (debug) and each it
	# has to compile (info); no cache directory, so nothing else could have supplied one.
	evaluate() {
		local op=$1
		env -u ODH_PLUGIN_CACHE_DIR ODH_PLUGIN_PRECOMPILED_DIR="$pre" RUST_LOG=odh_plugin_runtime::engine=debug \
			"${qemu[@]}" "$bin" plugin eval --plugin isvc --op "$op" --object "$out/isvc.yaml" --state "$out/state" \
			>"$out/$arch-eval-$op.json" 2>"$out/$arch-eval-$op.log"
	}
	timed "eval reconcile" evaluate reconcile || fail "$arch: plugin eval reconcile: $(cat "$out/$arch-eval-reconcile.log")"
	jq -e '.outcome.error == null and ([.outcome.apply[].object.kind] | index("ServiceMonitor"))' \
		"$out/$arch-eval-reconcile.json" >/dev/null ||
		fail "$arch: the reconcile applied nothing: $(cat "$out/$arch-eval-reconcile.json")"
	timed "eval validate" evaluate validate || fail "$arch: plugin eval validate: $(cat "$out/$arch-eval-validate.log")"
	jq -e '.decision.allowed == true' "$out/$arch-eval-validate.json" >/dev/null ||
		fail "$arch: the admission did not allow: $(cat "$out/$arch-eval-validate.json")"
	for op in reconcile validate; do
		grep -q "loaded a compiled plugin component" "$out/$arch-eval-$op.log" ||
			fail "$arch: $op did not load the precompiled component: $(cat "$out/$arch-eval-$op.log")"
		! grep -q "compiled a plugin component" "$out/$arch-eval-$op.log" ||
			fail "$arch: $op compiled the component: $(cat "$out/$arch-eval-$op.log")"
	done

	if [ "$arch" = arm64 ]; then
		# `make run` with this binary under qemu, on its precompiled built-ins.
		wrapper=$out/arm64-host
		printf '#!/bin/sh\ncmd=$1\nshift\nexec %s %s "$cmd" --plugin-precompiled-dir=%s "$@"\n' \
			"${qemu[*]}" "$(realpath "$bin")" "$(realpath "$pre")" >"$wrapper"
		chmod +x "$wrapper"
		timed run-check env ODH_RUN_HOST_BIN="$PWD/$wrapper" tests/dev/run-check.sh ||
			fail "arm64: the run-check failed (target/run-check.log)"
		! grep -q "compiled a plugin component" target/run-check.log ||
			fail "arm64: the run-check compiled a built-in"
	fi
done

# Each engine finds only its own artifacts: the names carry four different hashes.
if [ ${#compat[@]} -gt 1 ]; then
	distinct=$(printf '%s\n' "${compat[@]}" | sort -u | wc -l)
	[ "$distinct" -eq ${#compat[@]} ] || fail "two architectures share a compatibility hash: $(declare -p compat)"
fi

# And refuses another's even where its own would be: each architecture's engine given the next
# one's isvc code under its own name, with that code's digest beside it (so only wasmtime's
# check of the artifact's target and flags stands in the way), compiles the component instead
# and still admits.
read -r -a order <<<"$arches"
if [ ${#order[@]} -gt 1 ]; then
	for i in "${!order[@]}"; do
		arch=${order[$i]} other=${order[$(((i + 1) % ${#order[@]}))]}
		bin=$(make -s --no-print-directory static-binary-path ARCH="$arch")
		read -r -a qemu <<<"$(make -s --no-print-directory static-binary-qemu ARCH="$arch")"
		sha=$(jq -r .plugins.isvc.sha256 "$out/$arch-precompile.json")
		dir=$out/$arch-given-$other
		mkdir -p "$dir"
		cp "$out/$other-precompiled/$sha-${compat[$other]}.cwasm" "$dir/$sha-${compat[$arch]}.cwasm"
		sha256sum "$dir/$sha-${compat[$arch]}.cwasm" | cut -d' ' -f1 | tr -d '\n' >"$dir/$sha-${compat[$arch]}.cwasm.sha256"
		timed "eval validate on $other code" env -u ODH_PLUGIN_CACHE_DIR ODH_PLUGIN_PRECOMPILED_DIR="$dir" \
			RUST_LOG=odh_plugin_runtime::engine=debug "${qemu[@]}" "$bin" plugin eval --plugin isvc --op validate \
			--object "$out/isvc.yaml" --state "$out/state" >"$dir/eval.json" 2>"$dir/eval.log" ||
			fail "$arch: plugin eval on $other's code: $(cat "$dir/eval.log")"
		jq -e '.decision.allowed == true' "$dir/eval.json" >/dev/null ||
			fail "$arch: the admission on $other's code did not allow: $(cat "$dir/eval.json")"
		grep -q "ignoring a bad compiled-plugin cache entry" "$dir/eval.log" ||
			fail "$arch: $other's code was not refused: $(cat "$dir/eval.log")"
		grep -q "compiled a plugin component" "$dir/eval.log" ||
			fail "$arch: did not compile instead of running $other's code: $(cat "$dir/eval.log")"
		! grep -q "loaded a compiled plugin component" "$dir/eval.log" ||
			fail "$arch: loaded $other's code: $(cat "$dir/eval.log")"
	done
fi
echo "multiarch-check: $arches built, run under qemu-user, loaded their own precompiled built-ins (times: $times)"
