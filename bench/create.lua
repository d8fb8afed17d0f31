wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"name":"Bench","categoryId":1,"status":"available"}'
