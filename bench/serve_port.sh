# Sourced by the bench scripts that start `rexnlu serve --port 0`: serve_port OUT_FILE waits (up to
# 120 s) until the server has printed its 127.0.0.1:PORT line into OUT_FILE and /health answers,
# then prints PORT; it prints nothing when the server never became healthy.
serve_port() {
  local out=$1 port="" _
  for _ in $(seq 600); do
    port=$(grep -o '127.0.0.1:[0-9]*' "$out" 2>/dev/null | cut -d: -f2 || true)
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/health" > /dev/null && { echo "$port"; return 0; }
    sleep 0.2
  done
}
