local animals = tonumber(os.getenv("BENCH_ANIMALS") or "10000")
math.randomseed(os.time())
request = function()
  return wrk.format("GET", "/v1/pets/" .. math.random(1, animals))
end
