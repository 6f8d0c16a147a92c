-- wrk script: what the HTTP layer adds, per request (docs/benchmarks.md, REST section).
--   wrk -t1 -c1 -d10s -s tools/wrk_server_timing.lua http://127.0.0.1:8321
-- For each 200 answer it takes the client's latency of that request (clock read in
-- request() just before wrk writes it, and in response() once the answer is parsed)
-- and the server's own figures for the same request from its Server-Timing header:
--   engine;dur=  the engine's arrival -> completion
--   total;dur=   the server thread: request parsed by Qt -> answer formatted
-- and prints median / p90 / p99 of
--   client - engine  = added by HTTP (parse, route, submit, hand-back, format, write,
--                      loopback, and wrk's own side)
--   client - total   = outside the server's handler (Qt's parsing before it, the
--                      socket write, loopback, wrk)
-- Run it with one connection per thread (-c equal to -t): request() and response()
-- then pair up. Environment: BP_PATH, BP_BODY, BP_TOKEN as in wrk_infer.lua.
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bp_timespec;
int clock_gettime(int clk_id, bp_timespec *tp);
]]
local ts = ffi.new("bp_timespec")
local function now_us()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1e6 + tonumber(ts.tv_nsec) / 1e3
end

wrk.method = "POST"
wrk.path = os.getenv("BP_PATH") or "/v1/infer"
wrk.headers["Content-Type"] = "application/json"
wrk.body = os.getenv("BP_BODY") or '{"input_ids":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}'
local token = os.getenv("BP_TOKEN")
if token then
  wrk.headers["Authorization"] = "Bearer " .. token
end

-- per thread (each thread has its own Lua state)
local formatted
local sentAt = 0
client, engine, server = {}, {}, {}
missing = 0

function init(args)
  formatted = wrk.format()
end

function request()
  sentAt = now_us()
  return formatted
end

function response(status, headers, body)
  local took = now_us() - sentAt
  local timing = headers["Server-Timing"] or headers["server-timing"]
  if status ~= 200 or not timing then
    missing = missing + 1
    return
  end
  local e = tonumber(timing:match("engine;dur=([%d%.]+)"))
  local s = tonumber(timing:match("total;dur=([%d%.]+)"))
  if not e or not s then
    missing = missing + 1
    return
  end
  local n = #client + 1
  client[n], engine[n], server[n] = took, e * 1000, s * 1000
end

local threads = {}
function setup(thread)
  table.insert(threads, thread)
end

local function percentile(sorted, p)
  if #sorted == 0 then return 0 end
  local i = math.max(1, math.min(#sorted, math.ceil(p * #sorted)))
  return sorted[i]
end

function done(summary, latency, requests)
  local c, added, outside, eng, srv = {}, {}, {}, {}, {}
  local skipped = 0
  for _, t in ipairs(threads) do
    local tc, te, ts_ = t:get("client"), t:get("engine"), t:get("server")
    skipped = skipped + t:get("missing")
    for i = 1, #tc do
      table.insert(c, tc[i])
      table.insert(eng, te[i])
      table.insert(srv, ts_[i])
      table.insert(added, tc[i] - te[i])
      table.insert(outside, tc[i] - ts_[i])
    end
  end
  for _, l in ipairs({ c, added, outside, eng, srv }) do table.sort(l) end
  io.write(string.format("server-timing: %d requests paired (%d without a usable header)\n", #c, skipped))
  local function row(name, l)
    io.write(string.format("  %-34s p50 %8.1f us  p90 %8.1f us  p99 %8.1f us\n", name,
      percentile(l, 0.5), percentile(l, 0.9), percentile(l, 0.99)))
  end
  row("client (request() -> response())", c)
  row("engine (arrival -> completion)", eng)
  row("server handler (total)", srv)
  row("added by HTTP = client - engine", added)
  row("outside handler = client - total", outside)
end
