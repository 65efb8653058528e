-- wrk script of bench/load_test.sh: POSTs one extraction request and, at the end, prints one
-- machine-readable line with the percentiles and the count of each response status.
local body_file = os.getenv("REXNLU_LOAD_BODY")
local f = assert(io.open(body_file, "r"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"

local threads = {}
function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  statuses = {}
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local counts = {}
  for _, thread in ipairs(threads) do
    local s = thread:get("statuses")
    for code, n in pairs(s) do counts[code] = (counts[code] or 0) + n end
  end
  local parts = {}
  for code, n in pairs(counts) do table.insert(parts, code .. ":" .. n) end
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d seconds=%.3f p50_ms=%.2f p95_ms=%.2f p99_ms=%.2f max_ms=%.2f statuses=%s socket_errors=%d\n",
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(95) / 1000,
    latency:percentile(99) / 1000, latency.max / 1000, table.concat(parts, ","),
    e.connect + e.read + e.write + e.timeout))
end
