-- Each request carries the next of many API keys (one a line in BENCH_KEYS_FILE), so the
-- service's verified-key cache holds them all, as it does for many clients.
local keys = {}
for line in io.lines(os.getenv("BENCH_KEYS_FILE")) do
  if line ~= "" then keys[#keys + 1] = line end
end
local path = os.getenv("BENCH_PATH") or "/v1/pets?limit=20"
local i = 0
request = function()
  i = i % #keys + 1
  return wrk.format("GET", path, { ["Authorization"] = "Bearer " .. keys[i] })
end
