-- Pages through a listing by following each response's Link rel="next", starting over at
-- the end. One walk is shared by all connections of the thread (wrk does not tell which
-- connection a response belongs to), so it goes as deep as responses come back.
local first = os.getenv("BENCH_FIRST_PATH") or "/v1/pets?status=sold&limit=20"
local nextPath = nil

request = function()
  return wrk.format("GET", nextPath or first)
end

response = function(status, headers, body)
  local link = headers["link"] or headers["Link"]
  local target = link and string.match(link, '^<([^>]+)>; rel="next"')
  if target then
    nextPath = string.gsub(target, "^https?://[^/]+", "")
  else
    nextPath = nil
  end
end
