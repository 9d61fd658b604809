# lib.sh: what census.sh, stat.sh and gcmem.sh share; each sources it after setting
# `here` (this directory). census_start makes a scratch directory, the load client, the
# bench's mock and the gateway's config, and sets:
#   bench  the bench binary (BENCH, default /tmp/bench-apis)
#   d      the scratch directory; at exit it is removed and the mock stopped
#   load   the load client (LOAD, else built from this directory into $d)
#   mp tp  the mock's and the target's ports on 127.0.0.1
#   mpid   the mock's PID
# and writes $d/cfg/gw.yaml, the gateway's config (alone in its directory: the gateway
# watches it, not the logs beside it), with the bench's models: claude-bench (anthropic),
# oai-bench (openai) and resp-bench (responses) on the mock.
# With STREAM set, the mock then streams scenario c's shape: EVENTS deltas (default 200),
# one every EVENT_DELAY (default 5ms).

census_start() {
	bench=${BENCH:-/tmp/bench-apis}
	d="$(mktemp -d)"
	trap 'rm -rf "$d"' EXIT
	load=${LOAD:-}
	if [ -z "$load" ]; then load="$d/load"; (cd "$here" && go build -o "$load" .); fi
	mp=$((20000 + RANDOM % 10000)) tp=$((mp + 1))
	"$bench" mock -listen "127.0.0.1:$mp" >"$d/mock.log" 2>&1 &
	mpid=$!
	trap 'kill "$mpid" 2>/dev/null || true; rm -rf "$d"' EXIT # a failing step leaves no mock behind
	if [ -n "${STREAM:-}" ]; then
		for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$mp/__control?events=${EVENTS:-200}&event_delay=${EVENT_DELAY:-5ms}" && break; sleep 0.1; done
	fi
	mkdir "$d/cfg"
	cat >"$d/cfg/gw.yaml" <<Y
server: {listen: "127.0.0.1:$tp"}
backends:
  anth: {type: anthropic, base_url: "http://127.0.0.1:$mp", api_key: "test"}
  oai:  {type: openai, base_url: "http://127.0.0.1:$mp/v1", api_key: "test"}
  resp: {type: responses, base_url: "http://127.0.0.1:$mp/v1", api_key: "test"}
models:
  claude-bench: {backend: anth, upstream_model: claude-bench}
  oai-bench: {backend: oai, upstream_model: oai-bench}
  resp-bench: {backend: resp, upstream_model: resp-bench}
keys:
  bench: {key: "sk-bench", models: ["*"]}
Y
}

# census_wait polls the target's port until it answers: TRIES times (default 100) every
# INTERVAL (default 0.1 s).
census_wait() {
	for _ in $(seq 1 "${1:-100}"); do curl -s -o /dev/null "http://127.0.0.1:$tp/" && break; sleep "${2:-0.1}"; done
}
