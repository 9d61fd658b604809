// api.js: the admin API's client. The session cookie authenticates (sent by the browser,
// HttpOnly: no script reads it); every change carries the session's CSRF token.

let csrf = '';
let traceURL = '';
let onSignedOut = () => {};

export function setSession(s) { csrf = s ? s.csrf : ''; traceURL = (s && s.trace_url) || ''; }

/**
 * traceLink is the address of trace id in the operator's trace UI (admin.console.trace_url,
 * an http(s) URL the gateway validated), or '' when none is configured or id is not a
 * W3C trace id.
 */
export function traceLink(id) {
  if (!traceURL || !/^[0-9a-f]{32}$/.test(id || '')) return '';
  return traceURL.split('{trace_id}').join(id);
}
export function whenSignedOut(fn) { onSignedOut = fn; }
export function csrfToken() { return csrf; }

export class APIError extends Error {
  constructor(status, message, field) { super(message); this.status = status; this.field = field; }
}

/** api sends an admin API request and returns its JSON (null when none). */
export async function api(method, path, body) {
  const init = { method, headers: {}, credentials: 'same-origin', cache: 'no-store' };
  if (method !== 'GET' && method !== 'HEAD') init.headers['X-CSRF-Token'] = csrf;
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (r.status === 401) {
    onSignedOut();
  }
  if (!r.ok) {
    const e = data && data.error;
    throw new APIError(r.status, e ? e.message : (text || r.statusText), e ? e.field : undefined);
  }
  return data;
}

/** query builds a query string of the set (non-empty) values of o. */
export function query(o) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(o)) if (v !== '' && v !== undefined && v !== null && v !== false) p.set(k, String(v));
  const s = p.toString();
  return s ? '?' + s : '';
}
