-- wrk script: POST /v1/infer with a fixed JSON body (docs/benchmarks.md (REST section)).
--   wrk -t1 -c64 -d10s --latency -s tools/wrk_infer.lua http://127.0.0.1:8321
-- Environment overrides: BP_PATH (default /v1/infer), BP_BODY (the JSON body),
-- BP_TOKEN (adds "Authorization: Bearer ...").
-- No response() callback on purpose: it would make wrk parse every answer in
-- Lua and become the bottleneck; wrk already counts non-2xx answers.
wrk.method = "POST"
wrk.path = os.getenv("BP_PATH") or "/v1/infer"
wrk.headers["Content-Type"] = "application/json"
wrk.body = os.getenv("BP_BODY") or '{"input_ids":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}'
local token = os.getenv("BP_TOKEN")
if token then
  wrk.headers["Authorization"] = "Bearer " .. token
end
