// The API reference at /docs shows the service's own document, /v1/openapi.json. @fastify/swagger-ui's
// initializer always gives Swagger UI its copy at /docs/json instead, so the call is handed the real address.
'use strict';
(function () {
  const bundle = window.SwaggerUIBundle
  window.SwaggerUIBundle = Object.assign(function (config) {
    return bundle(Object.assign({}, config, { url: '/v1/openapi.json' }))
  }, bundle)
})()
