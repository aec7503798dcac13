# Sourced by the benchmarks: starts `./crucible serve` and waits until it answers.
# bench_serve PORT LOG [serve options...]: the server runs in the background, its stderr in LOG, its pid in $server
# (the caller's trap stops it); exits with the log printed when the server dies before it answers /readyz.
bench_serve() {
  local port="$1" log="$2"; shift 2
  "$root/crucible" serve --port "$port" "$@" 2>"$log" &
  server=$!
  until curl -sf -o /dev/null "http://127.0.0.1:$port/readyz"; do
    kill -0 "$server" 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.05
  done
}
