// A local reverse proxy for the conformance suite, whose CLI cannot send
// headers: it forwards every request to --target, adding
// "Authorization: Bearer <token>" (the token comes from the environment
// variable CONTINUO_TOKEN, never from argv). It listens on 127.0.0.1 at a
// port the system picks and prints one line, "listening <port>", when ready.
//
// Usage: CONTINUO_TOKEN=... node proxy.mjs --target http://127.0.0.1:PORT

import http from "node:http";
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({ options: { target: { type: "string" } } });
const token = process.env.CONTINUO_TOKEN;
if (!opt.target || !token) {
  console.error("proxy.mjs: --target and CONTINUO_TOKEN are required");
  process.exit(2);
}
const target = new URL(opt.target);

const server = http.createServer((req, res) => {
  // Host is passed on as the client sent it: the server's DNS-rebinding guard
  // must judge what the client sent, not what the proxy would say.
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const up = http.request(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
    (upRes) => {
      res.writeHead(upRes.statusCode, upRes.headers);
      upRes.pipe(res);
    },
  );
  up.on("error", (err) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { code: "internal", message: `proxy: ${err.message}`, retry: "wait" } }));
  });
  req.on("aborted", () => up.destroy());
  res.on("close", () => up.destroy());
  req.pipe(up);
});
server.listen(0, "127.0.0.1", () => console.log(`listening ${server.address().port}`));
