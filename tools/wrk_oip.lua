-- wrk script: POST /v2/models/echo/infer with the same OIP body the remote
-- client sends for a 16-token input (tools/bench_remote.sh).
local ids = {}
for i = 1, 16 do ids[i] = tostring(i) end
wrk.method = "POST"
wrk.path = "/v2/models/echo/infer"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"id":"1","inputs":[{"name":"input_ids","datatype":"INT64","shape":[1,16],"data":[' ..
           table.concat(ids, ",") .. ']}]}'

done = function(summary, latency, requests)
  io.write(string.format("wrk: %d requests in %.2f s = %.0f req/s, p50 %.3f ms, p99 %.3f ms, non-2xx %d, errors %d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
