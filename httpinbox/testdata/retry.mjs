// A retrying client as docs/http.md tells clients to write one, with
// Node's fetch: one key for every attempt of one request; retry on a
// network error, 409 (in flight), 503 and other 5xx but 501, honouring
// Retry-After; stop on any other answer. Prints the final answer as JSON.
// Usage: node retry.mjs URL KEY BODY
const [url, key, body] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let attempts = 0;
for (;;) {
  attempts++;
  let res;
  try {
    res = await fetch(url, {
      method: "POST",
      // A Structured Field String: quoted, with \ and " escaped.
      headers: { "Idempotency-Key": '"' + key.replace(/[\\"]/g, (c) => "\\" + c) + '"', "Content-Type": "text/plain" },
      body,
    });
  } catch (err) {
    if (attempts >= 10) throw err;
    await sleep(50 * attempts);
    continue;
  }
  const text = await res.text();
  const retryable = res.status === 409 || res.status === 503 || (res.status >= 500 && res.status !== 501);
  if (retryable && attempts < 10) {
    const after = Number(res.headers.get("retry-after") || "0");
    await sleep(Math.max(after * 1000, 50 * attempts));
    continue;
  }
  console.log(JSON.stringify({ attempts, status: res.status, replayed: res.headers.get("idempotent-replayed"), body: text }));
  break;
}
