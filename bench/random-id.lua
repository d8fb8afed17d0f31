local animals = tonumber(os.getenv("BENCH_ANIMALS") or "10000")
local prefix = os.getenv("BENCH_PET_PATH") or "/v1/pets/"
math.randomseed(os.time())
request = function()
  return wrk.format("GET", prefix .. math.random(1, animals))
end
