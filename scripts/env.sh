# Sourced by the scripts: a fresh machine may have Go installed in
# /usr/local/go (the official tarball's place) without it on PATH.
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
	export PATH="$PATH:/usr/local/go/bin"
fi
# promtool and caddy, when scripts/setup took them out of Debian's
# packages (run from the repository's root, as the scripts are).
if [[ -d out/tools/usr/bin ]]; then
	export PATH="$PWD/out/tools/usr/bin:$PATH"
fi
# go-nvml's header marks functions it still binds as deprecated: the race
# stage printed some 150 lines of those warnings, hiding what matters.
export CGO_CFLAGS="${CGO_CFLAGS:-$(go env CGO_CFLAGS)} -Wno-deprecated-declarations"

# build_tools DIR [TOOL...] builds the mlx-metrics binary into DIR, and
# each named tool under scripts/ (a module of its own, outside go.work)
# into DIR/TOOL: the benchmark and test scripts' common first step.
build_tools() {
	local dir=$1 tool
	shift
	go build -o "$dir/mlx-metrics" ./backend/cmd/mlx-metrics
	for tool in "$@"; do
		(cd "scripts/$tool" && GOWORK=off go build -o "$dir/$tool" .)
	done
}

# listening LOG PATTERN waits up to 30 s for a server that bound a free
# port itself (an address ending in :0) to name it in its LOG, and prints
# the address: sed's capture of PATTERN. No port is picked here and bound
# later by another process.
listening() {
	local addr
	for _ in $(seq 300); do
		addr=$(sed -n "s|$2|\1|p" "$1" | head -1)
		[[ -n $addr ]] && { echo "$addr"; return 0; }
		sleep 0.1
	done
	echo "no address in $1" >&2
	tail -5 "$1" >&2
	return 1
}
