-- 90 % reads of the first page, 10 % durable creates.
local readPath = os.getenv("BENCH_READ_PATH") or "/v1/pets?limit=20"
local createPath = os.getenv("BENCH_CREATE_PATH") or "/v1/pets"
local body = '{"name":"Bench","categoryId":1,"status":"available"}'
local counter = 0
local createHeaders = nil

request = function()
  counter = counter + 1
  if counter % 10 ~= 0 then
    return wrk.format("GET", readPath)
  end
  if createHeaders == nil then
    -- wrk.format replaces wrk.headers (the Authorization given with -H) when given its own.
    createHeaders = { ["Content-Type"] = "application/json" }
    for name, value in pairs(wrk.headers) do createHeaders[name] = value end
  end
  return wrk.format("POST", createPath, createHeaders, body)
end
